"""The training algorithm as a variable of a run: Unigram and WordPiece vocabularies, shared
and per language, one training per size, their models stored byte for byte with their SHA-256;
the counts are what the library gives for the stored model on every measured unit; and
settings no run can honour are refused before anything is stored."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest

from analyzer.bpe.pretokenize import resolve as splitter_of
from analyzer.export import export_document
from analyzer.external.library_trained import model_from_document, whole_tokenizer
from analyzer.metrics import algorithm_premiums, by_script, load_run_data, summaries
from analyzer.runs import RunError, RunSettings, execute_run
from analyzer.runs.execute import make_plans
from analyzer.runs.resolution import resolve
from analyzer.settings import SettingsError
from analyzer.store import (
    Algorithm,
    NotFound,
    StoreError,
    get_run,
    load_counts,
    load_model,
    load_texts,
    model_digests,
    vocabularies,
)
from helpers import dump

pytest.importorskip("tokenizers", reason="Unigram and WordPiece need pip install -e '.[tokenizers]'")

SETTINGS = dict(sizes=[520, 600], algorithms=["unigram", "wordpiece"], pretokenizers=["words"],
                jobs=2)


@pytest.fixture
def algorithm_run(tiny_db):
    return tiny_db, execute_run(tiny_db, RunSettings(**SETTINGS))


def test_every_algorithm_has_shared_and_per_language_vocabularies(algorithm_run):
    db, run_id = algorithm_run
    run = get_run(db, run_id)
    assert run.algorithms == ["bpe", "unigram", "wordpiece"]
    kinds = {v.scope: v.kind for v in vocabularies(db, run_id)}
    assert kinds["unigram"] == "unigram" and kinds["wordpiece"] == "wordpiece"
    for lang in run.languages:
        assert kinds[f"unigram:{lang}"] == "language-unigram"
        assert kinds[f"wordpiece:{lang}"] == "language-wordpiece"
    stored = {v.scope: v for v in vocabularies(db, run_id)}
    assert stored["unigram"].merges_learned is None and stored["unigram"].size == 600
    assert stored["unigram"].roundtrip_ok and stored["wordpiece"].roundtrip_ok


def test_each_size_is_its_own_job_and_its_own_stored_model(tiny_db):
    plans = make_plans(resolve(tiny_db, RunSettings(**SETTINGS)))
    unigram = [plan for plan in plans if plan.scope == "unigram"]
    assert [plan.sizes for plan in unigram] == [[520], [600]]
    assert unigram[0].label == "unigram [words] size 520 (its own training)"
    run_id = execute_run(tiny_db, RunSettings(**SETTINGS))
    digests = model_digests(tiny_db, run_id)
    assert [m["size"] for m in digests[("unigram", "words")]] == [520, 600]
    for scope in ("unigram", "wordpiece:kor_Hang"):
        for size in (520, 600):
            found = load_model(tiny_db, run_id, scope, "words", size)
            assert hashlib.sha256(found.document).hexdigest() == found.sha256
            assert found.entries == len(json.loads(found.document)["model"]["vocab"])
            assert found.entries <= size


@pytest.mark.slow
def test_the_counts_are_the_library_s_for_the_stored_model_on_every_unit(algorithm_run):
    db, run_id = algorithm_run
    run = get_run(db, run_id)
    texts = load_texts(db, run.corpus_id, run.languages)
    counts = {(scope, size, lang): units for scope, _, size, lang, units in load_counts(db, run_id)}
    checked = 0
    for v in vocabularies(db, run_id):
        if v.kind.algorithm not in (Algorithm.UNIGRAM, Algorithm.WORDPIECE):
            continue
        for size in run.sizes:
            document = load_model(db, run_id, v.scope, "words", size).document
            whole = whole_tokenizer(document)  # the file as a user loads it
            model = model_from_document(v.kind.algorithm, document, "words")
            for lang in {lang for scope, _, lang in counts if scope == v.scope}:
                units = [texts[lang][u] for u in run.measured_units]
                assert counts[(v.scope, size, lang)] == \
                    [len(e.ids) for e in whole.encode_batch(units, add_special_tokens=False)]
                assert counts[(v.scope, size, lang)] == [len(model.encode(t)) for t in units]
                checked += 1
    # 2 algorithms x 2 sizes x (shared: 3 languages; own: the pivot alone, the others and it)
    assert checked == 2 * 2 * (3 + 1 + 2 + 2)


@pytest.mark.slow
def test_summaries_and_premiums_put_the_algorithms_side_by_side(algorithm_run):
    db, run_id = algorithm_run
    data = load_run_data(db, run_id)
    rows = summaries(data)
    assert set(rows["algorithm"].dropna()) == {"bpe", "unigram", "wordpiece"}
    unigram = rows[(rows["vocab"] == "unigram") & (rows["size"] == 600)].iloc[0]
    shared = rows[(rows["vocab"] == "shared") & (rows["size"] == 600)].iloc[0]
    assert unigram["vs_shared"] == pytest.approx(unigram["tokens"] / shared["tokens"] - 1)
    premiums = algorithm_premiums(data)
    assert set(premiums["algorithm"]) == {"bpe", "unigram", "wordpiece"}
    assert len(premiums) == 3 * 2 * 3  # algorithms x sizes x languages
    row = premiums[(premiums["algorithm"] == "unigram") & (premiums["size"] == 600)
                   & (premiums["lang"] == "kor_Hang")].iloc[0]
    counts = data.counts
    tokens = counts[("unigram", "words", 600)]["kor_Hang"].sum()
    assert row["tokens"] == tokens
    assert row["premium"] == pytest.approx(tokens / counts[("unigram", "words", 600)]["eng_Latn"].sum())
    assert row["vs_bpe"] == pytest.approx(tokens / counts[("shared", "words", 600)]["kor_Hang"].sum() - 1)
    scripts = by_script(premiums)
    assert set(scripts["script"]) == {"Latin", "Cyrillic", "Hangul"}
    assert (scripts[scripts["algorithm"] == "bpe"]["vs_bpe"] == 0).all()
    document = export_document(db, run_id)
    models = {v["scope"]: v.get("models") for v in document["vocabularies"]}
    assert [m["size"] for m in models["unigram"]] == [520, 600] and models["shared"] is None
    assert len(document["algorithm_premiums"]) == len(premiums)


def test_a_bpe_only_run_is_as_before(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[300], jobs=1))
    assert get_run(tiny_db, run_id).algorithms == ["bpe"]
    assert algorithm_premiums(load_run_data(tiny_db, run_id)).empty
    assert model_digests(tiny_db, run_id) == {}


def test_a_stored_model_is_checked_against_its_digest(algorithm_run):
    db, run_id = algorithm_run
    with pytest.raises(NotFound, match="was trained at sizes 520, 600, not 550"):
        load_model(db, run_id, "unigram", "words", 550)
    damaged = load_model(db, run_id, "unigram", "words", 520).document.replace(b"[", b"[ ", 1)
    db.execute("UPDATE vocabulary_models SET document = ? WHERE size = 520", [damaged])
    db.conn.commit()
    with pytest.raises(StoreError, match="do not match their SHA-256"):
        load_model(db, run_id, "unigram", "words", 520)


@pytest.mark.parametrize("changes, setting, message", [
    (dict(algorithms=[]), "algorithms", "needs at least one algorithm"),
    (dict(algorithms=["wordpiece"], pretokenizers=["none"]), "algorithms",
     "wordpiece needs a pre-tokenizer other than none"),
    (dict(algorithms=["wordpiece"], sizes=[300]), "sizes", "wordpiece (algorithms) trains sizes "
     "from 512"),
    (dict(algorithms=["unigram"], sizes=[2_000_000]), "sizes", "trains sizes from 256 (its byte "
     "symbols) to 1,000,000"),
    (dict(algorithms=["unigram"], sizes=[], tokenizers=[]), "sizes", "nothing to measure"),
])
def test_settings_no_run_can_honour_are_refused_before_anything_is_stored(tiny_db, changes,
                                                                            setting, message):
    before = dump(tiny_db.path)
    with pytest.raises(RunError, match=re.escape(message)) as caught:
        execute_run(tiny_db, RunSettings(**{**SETTINGS, **changes}))
    assert caught.value.setting == setting
    assert dump(tiny_db.path) == before


def test_an_algorithm_is_one_of_the_algorithms_refused_as_the_settings_are_made():
    with pytest.raises(SettingsError) as caught:
        RunSettings(algorithms=["bpe", "sentencepiece"])
    assert str(caught.value) == "algorithms must be among bpe, unigram, wordpiece, not 'sentencepiece'"
    assert caught.value.setting == "algorithms"
    assert RunSettings(algorithms=["unigram"]).algorithms == [Algorithm.UNIGRAM]


def test_an_algorithm_without_sizes_but_with_a_tokenizer_is_refused(tiny_db, catalog_store):
    with pytest.raises(RunError, match="unigram trains a vocabulary") as caught:
        execute_run(tiny_db, RunSettings(sizes=[], algorithms=["unigram"],
                                         tokenizers=["cl100k_base"]))
    assert caught.value.setting == "algorithms"


def test_tokenize_spells_a_wordpiece_chunk_that_begins_with_its_mark(algorithm_run):
    from analyzer.queries import tokenization, trained_vocabulary

    db, run_id = algorithm_run
    vocabulary = trained_vocabulary(db, run_id, "wordpiece", 600)
    for text in ["## the cat", "the ##cat", "###"]:
        found = tokenization(text, vocabulary.pieces)
        assert bytes.fromhex("".join(found["bytes"])) == text.encode()


def test_an_export_its_library_counts_otherwise_keeps_nothing(algorithm_run, tmp_path):
    """A stored count that the file, loaded by its library, does not give (here the count is
    altered; in use, a Split pattern Oniguruma reads otherwise than `regex`)."""
    from analyzer.export import ExportMismatch, export_tokenizer
    from analyzer.store.values import pack_counts, unpack_counts

    db, run_id = algorithm_run
    row = db.execute("SELECT c.rowid, c.unit_tokens FROM token_counts c JOIN vocabularies v ON "
                     "v.id = c.vocab_id WHERE v.scope = 'unigram' AND c.size = 520 AND "
                     "c.lang = 'rus_Cyrl'").fetchone()
    units = unpack_counts(row[1])
    units[2] += 1
    db.execute("UPDATE token_counts SET unit_tokens = ? WHERE rowid = ?", [pack_counts(units), row[0]])
    db.conn.commit()
    out = tmp_path / "out"
    with pytest.raises(ExportMismatch, match="counts .* tokens in rus_Cyrl unit 3") as caught:
        export_tokenizer(db, run_id, "unigram", 520, out)
    assert caught.value.language == "rus_Cyrl" and caught.value.unit == 3
    assert list(out.iterdir()) == []
    assert export_tokenizer(db, run_id, "unigram", 600, out).files[0].is_file()


class _Stub:
    """A model that cuts texts around spaces and spells each chunk as one token per character,
    but loses the `x`s; it notes the chunks it is asked to count."""

    splitter = splitter_of("split: ")

    def __init__(self):
        self.asked: list[list[str]] = []

    def count_chunks(self, chunks):
        self.asked.append(list(chunks))
        ids = [ord(char) for chunk in chunks for char in chunk]
        return np.array(ids, np.int32), np.array([len(chunk) for chunk in chunks], np.int32)

    def spells(self, chunks, ids, lengths):
        spelled = "".join(chr(token) for token in ids.tolist() if chr(token) != "x")
        return spelled == "".join(chunks)


def test_counting_encodes_each_distinct_chunk_once_and_checks_the_round_trip_per_chunk():
    from analyzer.runs.builders.library import _count

    model = _Stub()
    counts, histograms, ok = _count(model, {"eng": ["ab ab", "abc"], "fra": ["a"]})
    assert counts == {"eng": [5, 3], "fra": [1]} and ok
    assert model.asked == [["ab", " ", "abc"], ["a"]]  # each language's distinct chunks, once
    assert histograms["eng"] == {ord("a"): 3, ord("b"): 3, ord("c"): 1, ord(" "): 1}
    assert _count(_Stub(), {"eng": ["ab", "axb"]})[2] is False  # a chunk that loses a byte
