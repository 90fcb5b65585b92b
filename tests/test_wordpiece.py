"""The WordPiece trainer: the literal reference equals Hugging Face's `WordPieceTrainer` (the
vocabulary in id order) on small alphabets full of `#` (its collisions and stale counts) and
on real multilingual text, or, where Hugging Face differs from itself, is one of its outcomes; the compiled engine equals the reference on the same and more;
`ANALYZER_ENGINE=python` and a missing extension train by the reference; bad input is
refused."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from array import array

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.bpe.pretokenize import distinct_chunks, resolve
from analyzer.wordpiece import pack, reference, train, train_packed
from analyzer.wordpiece.trainer import chunks_of, compiled_engine
from helpers import shared_corpus

needs_compiled = pytest.mark.skipif(compiled_engine() is None,
                                    reason="the compiled WordPiece engine is not built here")


def huggingface(chunks: dict[bytes, int], size: int) -> list[bytes]:
    """Hugging Face's trainer on the same chunks (as train_model ran it), in bytes."""
    pytest.importorskip("tokenizers", reason="comparing with Hugging Face needs its tokenizers")
    from analyzer.external.library_trained import CHAR_BYTES, huggingface_wordpiece
    text = {chunk.decode("utf-8", errors="surrogateescape"): count for chunk, count in chunks.items()}
    return [bytes(CHAR_BYTES[char] for char in piece) for piece in huggingface_wordpiece(text, size)]


# Chunks over "a", "b", "#" (so `##` pieces collide with merged ones) and two 2-byte letters.
small_chunks = st.dictionaries(
    st.text(st.sampled_from(["a", "b", "#", "é", "ш"]), min_size=1, max_size=10)
    .map(lambda text: text.encode()), st.integers(1, 5), min_size=1, max_size=14)
hash_chunks = st.dictionaries(  # "#" and "a" only: the most collisions
    st.text(st.sampled_from(["a", "#"]), min_size=1, max_size=12).map(lambda text: text.encode()),
    st.integers(1, 4), min_size=1, max_size=20)


def assert_one_of_hugging_faces(chunks: dict[bytes, int], size: int, runs: int = 40) -> None:
    """The reference's vocabulary is Hugging Face's, or, where Hugging Face differs from itself
    from run to run (entries tied exactly in its queue: reference.py), one of those it makes."""
    ours = reference.train(chunks, size)
    if huggingface(chunks, size) != ours:
        assert any(huggingface(chunks, size) == ours for _ in range(runs)), \
            f"none of {runs + 1} of Hugging Face's trainings made ours on {chunks!r}, {size}"


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunks=st.one_of(small_chunks, hash_chunks), size=st.integers(512, 560))
def test_the_reference_is_hugging_faces_trainer(chunks, size):
    assert_one_of_hugging_faces(chunks, size)


# Two queue entries for (###, ##aa) tie at count 5: one holding chunks 6 and 8, one holding 8
# alone (queued later). Ours takes the older first; Hugging Face either, by the random seeds of
# its hash maps, and the vocabulary differs (##aaa## learned or not before the size is reached).
TIED = {b"####": 4, b"#aa": 1, b"a": 1, b"aa": 2, b"aaa##a#": 3, b"aaa#": 1, b"a#aaaa#a": 1,
        b"aaaa#####": 1, b"###aaaaa##": 4}


def test_where_hugging_face_differs_from_itself_ours_is_one_of_its_vocabularies():
    theirs = {tuple(huggingface(TIED, 552)) for _ in range(40)}
    assert len(theirs) == 2  # (about half the runs each: 2^-39 that 40 agree)
    ours = reference.train(TIED, 552)
    assert tuple(ours) in theirs and ours[517:519] == [b"###aaaa", b"###aaaaa##"]
    assert {vocab[518] for vocab in theirs} == {b"###aaaaa##", b"##aaa##"}
    if compiled_engine() is not None:
        assert train(TIED, 552, engine="compiled") == ours


@pytest.mark.parametrize("chunks, size, learned", [
    # "#" + "###" is the string "##" (a new id); then "##" + "###" is "###", the continuing
    # "#" (id 291): its id again, and the vocabulary does not grow.
    ({b"###": 1}, 530, [b"##"]),
    ({b"##a": 2}, 530, [b"##"]),  # "##" + "##a" is "##a" (id 353)
    # "###" + "###" is "####"; then "#" + "####" is "###" again.
    ({b"####": 3}, 530, [b"####"]),
    ({b"hug": 10, b"pug": 5, b"hugs": 5}, 516, [b"##ug", b"hug", b"pug", b"hugs"]),
])
def test_collisions_reuse_an_id_as_hugging_face_does(chunks, size, learned):
    vocab = reference.train(chunks, size)
    assert vocab[512:] == learned
    assert len(set(vocab)) == len(vocab)
    assert_one_of_hugging_faces(chunks, size)


def test_the_byte_symbols_come_first_in_byte_order():
    vocab = reference.train({b"\x00\xff#": 1}, 512)
    assert vocab == [bytes([b]) for b in range(256)] + [b"##" + bytes([b]) for b in range(256)]


def ntrex_chunks(split: str, lines: int) -> dict[bytes, int]:
    folder = shared_corpus("ntrex128")
    texts = []
    for language in ["eng_Latn", "deu_Latn", "rus_Cyrl", "arb_Arab", "hin_Deva", "kor_Hang",
                     "zho_Hans", "tha_Thai", "amh_Ethi", "bod_Tibt"]:
        texts += (folder / f"{language}.txt").read_text(encoding="utf-8").splitlines()[:lines]
    chunks, counts = distinct_chunks(texts, resolve(split))
    return {chunk.encode(): count for chunk, count in zip(chunks, counts)}


@pytest.fixture(scope="module")
def ntrex() -> dict[str, dict[bytes, int]]:
    return {split: ntrex_chunks(split, 40) for split in ("cl100k", "words")}


@pytest.mark.slow
@pytest.mark.corpora
@pytest.mark.parametrize("split, size", [("cl100k", 1500), ("words", 900)])
def test_the_reference_is_hugging_faces_trainer_on_ntrex(ntrex, split, size):
    assert_one_of_hugging_faces(ntrex[split], size, runs=3)


@pytest.mark.slow
@pytest.mark.corpora
@needs_compiled
@pytest.mark.parametrize("split", ["cl100k", "words"])
def test_the_engine_is_the_reference_on_ntrex(ntrex, split):
    expected = reference.train(ntrex[split], 3000)
    assert train(ntrex[split], 3000, engine="compiled") == expected
    for size in (512, 700, 1111):  # every prefix of the training: the same steps
        assert train(ntrex[split], size, engine="compiled") == expected[:size]
    table = pack(ntrex[split])  # the queue letting entries into its heap one count at a time
    assert compiled_engine().train(table.data, table.offsets, table.counts, 3000,
                                   let_in=1) == expected


@pytest.mark.slow
@pytest.mark.corpora
@needs_compiled
def test_the_engine_is_hugging_faces_trainer_on_more_ntrex():
    chunks = ntrex_chunks("cl100k", 300)
    assert train(chunks, 6000, engine="compiled") == huggingface(chunks, 6000)


# Any bytes (invalid UTF-8 too), empty chunks, and chunks as str with surrogate escapes.
any_chunks = st.dictionaries(
    st.binary(max_size=12).map(lambda b: bytes(x % 3 + 0x23 if x < 180 else x for x in b)),
    st.integers(1, 2**40), max_size=25)


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(chunks=st.one_of(small_chunks, hash_chunks, any_chunks), size=st.integers(512, 600))
def test_the_engine_is_the_reference(chunks, size):
    assert train(chunks, size, engine="compiled") == train(chunks, size, engine="python")


# Counts on both sides of the queue's buckets (counts of 65536 and more go straight to its heap).
wide_counts = st.dictionaries(
    st.text(st.sampled_from(["a", "b", "#", "é"]), min_size=1, max_size=10).map(str.encode),
    st.one_of(st.integers(1, 6), st.integers(65530, 65540), st.integers(1, 2**20)),
    min_size=1, max_size=30)


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(chunks=st.one_of(small_chunks, hash_chunks, any_chunks, wide_counts),
       size=st.integers(512, 600), let_in=st.integers(1, 4))
def test_the_queue_letting_entries_in_a_few_at_a_time_trains_the_same(chunks, size, let_in):
    # The engine's queue keeps only the larger counts in its heap and the rest aside by count,
    # letting them in as the heap empties (`let_in` at a time): the order must stay the
    # reference's, whether entries are let in one at a time or all at once.
    table = pack(chunks)
    assert compiled_engine().train(table.data, table.offsets, table.counts, size,
                                   let_in=let_in) == train(chunks, size, engine="python")


@needs_compiled
@settings(max_examples=60, deadline=None)
@given(chunks=any_chunks, size=st.integers(512, 560))
def test_str_chunks_train_as_their_utf8_with_surrogate_escapes(chunks, size):
    text = {chunk.decode("utf-8", errors="surrogateescape"): count for chunk, count in chunks.items()}
    assert train(text, size, engine="compiled") == train(chunks, size, engine="python")
    assert train(text, size, engine="python") == train(chunks, size, engine="python")


@pytest.mark.slow
@needs_compiled
def test_many_chunks_counted_on_two_threads_train_as_the_reference():
    # From 65,536 chunks the engine counts the first pairs in two halves on two threads, and
    # joins their lists of chunks in chunk order.
    rng = random.Random(5)
    letters = [*"abcdefgh#", "é", "ш", "字"]
    chunks: dict[bytes, int] = {}
    while len(chunks) < 70_000:
        chunk = "".join(rng.choice(letters) for _ in range(rng.randint(1, 12))).encode()
        chunks[chunk] = rng.randint(1, 9)
    assert train(chunks, 700, engine="compiled") == train(chunks, 700, engine="python")


def test_counts_past_32_bits_are_summed_in_64():
    # Hugging Face casts counts to i32 (this would wrap there); both engines keep them whole.
    chunks = {b"ab": 2**33, b"cd": 2**32 + 5, b"ce": 3}
    assert train(chunks, 514, engine="python")[512:] == [b"ab", b"cd"]
    if compiled_engine() is not None:
        assert train(chunks, 514, engine="compiled")[512:] == [b"ab", b"cd"]


def test_counts_whose_sums_pass_63_bits_train_as_the_reference():
    # (##a, ##b) occurs 2**63 times: int64 sums would wrap (the engine refuses, the reference
    # trains them); Python's do not.
    chunks = {b"xab": 2**62, b"yab": 2**62, b"cdc": 2**62 - 1}
    assert train(chunks, 516, engine="python")[512:] == [b"##ab", b"xab", b"yab", b"cd"]
    assert train(chunks, 516) == train(chunks, 516, engine="python")
    assert train({b"aaaa": 2**62, b"cdc": 5}, 516) == train({b"aaaa": 2**62, b"cdc": 5}, 516,
                                                             engine="python")


@needs_compiled
def test_the_engine_refuses_counts_whose_sums_could_wrap():
    with pytest.raises(OverflowError, match="too large to sum in 64 bits"):
        compiled_engine().train(b"ab", array("q", [0, 2]), array("q", [2**62]), 600)


def test_a_chunk_twice_in_a_table_trains_as_its_counts_summed():
    # "é" and its UTF-8 as surrogate escapes are two str, the same bytes: the table holds
    # them twice, and both engines count them as one chunk (3 + 3 > 5: é first).
    chunks = {"é": 3, "\udcc3\udca9": 3, "cd": 5}
    assert chunks_of(pack(chunks)) == {b"\xc3\xa9": 6, b"cd": 5}
    assert train(chunks, 513) == train(chunks, 513, engine="python")
    assert train(chunks, 513)[512:] == [b"\xc3\xa9"]


def test_a_size_past_2_to_the_31_trains_as_any_large_size():
    chunks = {b"hug": 10, b"pug": 5}
    assert train(chunks, 2**31) == train(chunks, 2**31, engine="python") == train(chunks, 600)


def test_a_packed_layout_trains_as_its_dict():
    chunks = {"low": 5, "lower": 2, "newest": 6, "widest": 3, "é\udcff": 1}
    packed = pack(chunks)
    assert list(chunks_of(packed).items()) == [(b"low", 5), (b"lower", 2), (b"newest", 6),
                                               (b"widest", 3), (b"\xc3\xa9\xff", 1)]
    assert train_packed(packed, 530) == train(chunks, 530, engine="python")


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="size of 512 or more"):
        train({"a": 1}, 511)
    with pytest.raises(ValueError, match=r"chunk 'b' has count 0"):
        train({"a": 1, "b": 0}, 600)
    with pytest.raises(TypeError):
        pack({"a": 1, b"b": 2.5})
    with pytest.raises(OverflowError):
        pack({"a": 2**63})


def test_a_mapping_packs_in_its_own_order_with_any_integer_counts():
    # Counts are read by their __index__ (another library's integers), chunks in the
    # mapping's order, on either engine.
    import collections
    ordered = collections.OrderedDict([("ab", 2), ("c", 1)])
    ordered.move_to_end("ab")
    table = pack(ordered)
    assert chunks_of(table) == {b"c": 1, b"ab": 2}
    assert table.data == b"cab" and table.counts.tolist() == [1, 2]
    np = pytest.importorskip("numpy")
    assert pack({"ab": np.int64(3)}).counts.tolist() == [3]


@needs_compiled
def test_the_engine_refuses_a_bad_layout():
    engine = compiled_engine()
    with pytest.raises(ValueError, match="chunk 1: offsets 2..9 or count 1 out of range"):
        engine.train(b"abcd", array("q", [0, 2, 9]), array("q", [1, 1]), 600)
    with pytest.raises(ValueError, match="chunk 0: offsets 0..2 or count -3 out of range"):
        engine.train(b"abcd", array("q", [0, 2]), array("q", [-3]), 600)
    with pytest.raises(ValueError, match="one longer"):
        engine.train(b"abcd", array("q", [0, 2]), array("q", [1, 1]), 600)
    with pytest.raises(ValueError, match="size"):
        engine.train(b"ab", array("q", [0, 2]), array("q", [1]), 2**31)
    with pytest.raises(ValueError, match="let_in must be 1 or more"):
        engine.train(b"ab", array("q", [0, 2]), array("q", [1]), 600, let_in=0)
    with pytest.raises(TypeError, match="chunk 1 is int"):
        engine.pack(["a", 3])
    with pytest.raises(TypeError, match="list"):
        engine.pack(("a",))


def test_the_compiled_wordpiece_engine_is_built_wherever_there_is_a_compiler():
    import shutil
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here: the reference trains")
    assert compiled_engine() is not None, "pip install -e . should have built analyzer/wordpiece/engine/"


@pytest.mark.parametrize("how", ["ANALYZER_ENGINE=python", "no extension"])
def test_the_reference_trains_without_the_compiled_engine(how):
    env = {k: v for k, v in os.environ.items() if k != "ANALYZER_ENGINE"}
    code = ("from analyzer.wordpiece import train; from analyzer.wordpiece import trainer; "
            "print(trainer.compiled_engine(), train({'hug': 10, 'pug': 5, 'hugs': 5}, 516)[512:])")
    if how == "no extension":
        code = "import sys; sys.modules['analyzer.wordpiece._engine'] = None; " + code
    else:
        env["ANALYZER_ENGINE"] = "python"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=env)
    assert done.stdout.strip() == "None [b'##ug', b'hug', b'pug', b'hugs']"


def long_training_input() -> tuple[bytearray, array, array]:
    """A packed layout whose training to 2^31 takes seconds (a million merges and more)."""
    rng = random.Random(3)
    letters = "abcdefghijklmnopqrstuvwxyz#"
    chunks: dict[bytes, int] = {}
    while len(chunks) < 200_000:
        chunks["".join(rng.choice(letters) for _ in range(rng.randint(1, 60))).encode()] = \
            rng.randint(1, 50)
    table = pack(chunks)
    return bytearray(table.data), table.offsets, table.counts


@pytest.mark.slow
@needs_compiled
def test_a_signal_during_a_training_is_handled_there_and_stops_it():
    # Ctrl-C must stop a long training, not wait for its end: the engine lets Python's signal
    # handlers run as it trains. Seen from a handler: the engine holds a view of the data (a
    # bytearray cannot be resized then), and the handler's exception ends the training.
    import signal
    data, offsets, counts = long_training_input()
    seen: list[str] = []

    def handler(signum, frame):
        if seen[-1:] == ["inside"]:  # stopped: the timer may fire again before it is cancelled
            return
        try:
            data.append(0)
        except BufferError:  # the training holds it: handled inside
            seen.append("inside")
            raise KeyboardInterrupt from None
        data.pop()
        seen.append("outside")

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
    try:
        with pytest.raises(KeyboardInterrupt):
            compiled_engine().train(data, offsets, counts, 2**31 - 1)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert seen[-1:] == ["inside"]
