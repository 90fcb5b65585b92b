"""No training that runs away (issue 68): every trainer's work is bounded by its input's size, on
one long chunk, on lines that are a chunk each (a script without spaces under `gpt2`, or any
text under `none`), and on long runs of one byte, at every algorithm.

The compiled Unigram and WordPiece engines count their steps (`work`): 4 times the bytes may
take a few times the steps, never the 16 times of an algorithm quadratic in a chunk's length
(the Unigram engine's pruning was: it counted a piece's place in its chunk byte by byte from
the chunk's start). Where no engine counts (BPE's, the pure-Python engines that stand in for
the compiled ones, and counting: BPE's replay, Unigram's by Hugging Face), the processor time
of 4 times the bytes is compared, the least of three, with a bound as generous. WordPiece's
encoder counts its steps in its own test (tests/test_wordpiece_encoder.py)."""

from __future__ import annotations

import functools
import random
import time
from array import array

import pytest

from analyzer import bpe
from analyzer.bpe import ENGINES
from analyzer.unigram import trainer as unigram
from analyzer.wordpiece import pack
from analyzer.wordpiece import trainer as wordpiece

needs_unigram = pytest.mark.skipif(unigram.compiled_engine() is None,
                                   reason="the compiled Unigram engine is not built here")
needs_wordpiece = pytest.mark.skipif(wordpiece.compiled_engine() is None,
                                     reason="the compiled WordPiece engine is not built here")


def chinese(n: int, seed: int = 1) -> str:
    """n bytes of random Chinese characters (3 bytes each) from 3,000: mostly pairs seen once,
    which is what a long chunk of a script without spaces gives the trainers."""
    rng = random.Random(seed)
    return "".join(chr(0x4E00 + rng.randrange(3000)) for _ in range(n // 3))


def runs(n: int) -> str:
    """n bytes of long runs of one byte, each between two others."""
    rng = random.Random(2)
    parts, size = [], 0
    while size < n:
        part = rng.choice("ab") * rng.randint(100, 3000) + rng.choice("xyz")
        parts.append(part)
        size += len(part)
    return "".join(parts)[:n]


def lines_of(text: str, lines: int) -> list[str]:
    """The text cut into `lines` lines of equal length: each a chunk."""
    length = len(text) // lines
    return [text[k * length:(k + 1) * length] for k in range(lines)]


INPUTS = {"one chunk": lambda n: lines_of(chinese(n), 1),
          "one-chunk lines": lambda n: lines_of(chinese(n), 10),
          "runs of one byte": lambda n: lines_of(runs(n), 1)}


# --- Unigram --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", INPUTS)
def test_the_unigram_references_work_is_its_bytes_times_its_rounds(kind):
    """The reference too, by the substrings it looks at (timed, it was at the mercy of a test
    worker beside it: 4.5 times the time a pass for 4 times the bytes alone, 10 times beside
    a full run's other worker)."""
    trained = {n: unigram.train(dict.fromkeys(INPUTS[kind](n), 1), 300, engine="python")
               for n in (4_000, 16_000)}
    per_round = {n: t.work / (n * (t.rounds + 1)) for n, t in trained.items()}
    assert per_round[16_000] <= 1.25 * per_round[4_000], per_round


@needs_unigram
@pytest.mark.parametrize("kind", INPUTS)
def test_unigrams_work_is_its_bytes_times_its_rounds(kind):
    """O(n x rounds): every EM step and pruning passes over the bytes and their nodes once
    (at most 16 a byte), the seeding sorts every key once, and the rounds grow as the log of
    the seeds. Before the fix, the steps a round took per byte grew with the chunk (2.9 times
    here: 1.7 times), and 4 times the bytes took 9 times the steps."""
    trained = {n: unigram.train(dict.fromkeys(INPUTS[kind](n), 1), 1000, engine="compiled",
                                threads=1) for n in (20_000, 80_000)}
    per_round = {n: t.work / (n * (t.rounds + 1)) for n, t in trained.items()}
    assert per_round[80_000] <= 1.25 * per_round[20_000], per_round
    assert trained[80_000].work <= 10 * trained[20_000].work


# --- WordPiece ------------------------------------------------------------------------------


def wordpiece_work(texts: list[str], size: int) -> int:
    table = pack(dict.fromkeys(texts, 1))
    work = array("Q", [0])
    wordpiece.compiled_engine().train(table.data, table.offsets, table.counts, size, work=work)
    return work[0]


@needs_wordpiece
@pytest.mark.parametrize("kind", INPUTS)
def test_wordpieces_work_is_its_bytes_times_its_steps(kind):
    """O(n x steps), as Hugging Face's trainer (a step reads each chunk its entry holds): at one
    size, 4 times the bytes take at most 8 times the steps."""
    small, large = (wordpiece_work(INPUTS[kind](n), 1000) for n in (30_000, 120_000))
    assert large <= 8 * small, (small, large)


# --- Every engine, by processor time --------------------------------------------------------


def seconds(train, texts: list[str]) -> tuple[float, int]:
    """The least processor time of three trainings (the least: what the work needs, with the
    least of what other processes took from it), and how many passes over the input a
    training made (Unigram's rounds of EM and pruning, more as the seeds grow; others one)."""
    best, passes = float("inf"), 1
    for _ in range(3):
        start = time.process_time()
        passes = train(texts)
        best = min(best, time.process_time() - start)
    return best, passes


TRAINERS = {
    "bpe compiled": (lambda texts: ENGINES["compiled"].train_detailed(texts, 2000) and 1,
                     1_000_000),
    "bpe python": (lambda texts: ENGINES["python"].train_detailed(texts, 2000) and 1, 50_000),
    "wordpiece reference": (lambda texts: wordpiece.train(dict.fromkeys(texts, 1), 600,
                                                          engine="python") and 1, 12_000),
}


@functools.cache
def trained(algorithm: str):
    """A vocabulary of 1,000 trained on 20 kB of Chinese, to count with."""
    text = chinese(20_000, seed=3)
    if algorithm == "bpe":
        return bpe.train([text], 1000)
    pytest.importorskip("tokenizers", reason="Unigram is counted by Hugging Face tokenizers")
    from analyzer.external.library_trained import train_model
    from analyzer.identity import Algorithm
    return train_model(Algorithm.UNIGRAM, {text: 1}, 1000, "none")


def unigram_counting(texts: list[str]) -> int:
    model = trained("unigram")
    model._chunk_ids.clear()  # (encoded anew each time)
    model.encode_chunks(texts)
    return 1


# Counting too: BPE's replay of the merges, Unigram's by the library (WordPiece's encoder
# counts its steps: tests/test_wordpiece_encoder.py).
TRAINERS["bpe counting"] = (lambda texts: bpe.count_tokens(texts, trained("bpe"), [1000]) and 1,
                            1_000_000)
TRAINERS["unigram counting"] = (unigram_counting, 200_000)


@pytest.mark.slow
@pytest.mark.parametrize("kind", INPUTS)
@pytest.mark.parametrize("name", TRAINERS)
def test_every_trainers_time_grows_as_its_bytes(name, kind):
    """4 times the bytes take at most 8 times the processor time a pass (quadratic: 16), to
    train or to count."""
    if name.endswith("compiled") and "compiled" not in ENGINES:
        pytest.skip("the compiled BPE engine is not built here")
    train, n = TRAINERS[name]
    (small, small_passes), (large, large_passes) = (seconds(train, INPUTS[kind](size))
                                                    for size in (n, 4 * n))
    assert large / large_passes <= 8 * small / small_passes, (small, small_passes, large,
                                                              large_passes)
