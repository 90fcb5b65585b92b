"""Each section's line of what the run shows (report/takeaways.py): its numbers are the run's,
read back from the sentence and checked against the metrics they come from."""

from __future__ import annotations

import re

import pytest

from analyzer.corpus import language_name
from analyzer.identity import PARITY_SCOPE, SHARED_SCOPE, VocabKind
from analyzer.metrics import RunResults, load_run_data, trained_language
from analyzer.report.takeaways import TAKEAWAYS, takeaway
from analyzer.runs import RunSettings, execute_run


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> RunResults:
    from pathlib import Path

    from analyzer.corpus import read_corpus
    from analyzer.store import open_db, save_corpus

    folder = tmp_path_factory.mktemp("takeaways")
    sample = Path(__file__).parent.parent / "parallel_corpora" / "harbour_town"
    db = open_db(folder / "t.db")
    save_corpus(db, read_corpus(sample), "harbour")
    run_id = execute_run(db, RunSettings(sizes=[400, 600], per_language=True, parity=True,
                                         jobs=1))
    return RunResults(load_run_data(db, run_id))


def numbers(sentence: str) -> list[float]:
    """The figures of a sentence, in order ("1,024" is 1024; "1.44x" is 1.44; "+12%" is 12)."""
    found = re.findall(r"(?<![\w-])[-+]?\d[\d,]*(?:\.\d+)?", sentence)  # not UTF-8's 8
    return [float(n.replace(",", "")) for n in found]


def at_largest(results: RunResults, vocab: str):
    frame, run = results.frame, results.run
    return frame[(frame["vocab"] == vocab) & (frame["size"] == max(run.sizes))
                 & (frame["pretokenizer"] == run.pretokenizers[0])]


def test_every_takeaway_of_a_trained_run_is_said_with_its_numbers(results):
    said = {title: takeaway(title, results, results.model_costs(None)) for title in TAKEAWAYS}
    unsaid = [title for title, text in said.items() if not text]
    # Production tokenizers and priced models are not in this run: only theirs are silent.
    assert set(unsaid) == {"Production tokenizers", "What the same content costs, by model"}
    assert all(text.endswith((".", ").")) for text in said.values() if text)


def test_bytes_or_vocabulary_splits_the_highest_premium_into_its_two_parts(results):
    rows = at_largest(results, SHARED_SCOPE)
    rows = rows[rows["lang"] != results.run.pivot]
    top = rows.loc[rows["premium"].idxmax()]
    text = takeaway("Overhead by language: bytes or vocabulary?", results, None)
    size, premium, byte_premium, carried = numbers(text)
    assert language_name(top["lang"]) in text and size == max(results.run.sizes)
    assert premium == round(top["premium"], 2) and byte_premium == round(top["byte_premium"], 2)
    assert carried == round(top["bytes_per_token"] / top["pivot_bytes_per_token"], 2)
    assert abs(byte_premium / carried - premium) < 0.02  # premium = bytes / what a token carries


def test_shared_vs_own_names_whom_sharing_costs_most(results):
    frame = at_largest(results, SHARED_SCOPE).set_index("lang")["tokens"]
    everything = results.frame
    own = everything[(everything["kind"] == VocabKind.LANGUAGE)
                     & (everything["size"] == max(results.run.sizes))
                     & (trained_language(everything) == everything["lang"])].set_index("lang")
    cost = frame / own["tokens"] - 1
    text = takeaway("Shared vs own vocabulary", results, None)
    assert language_name(cost.idxmax()) in text
    _, most, median = numbers(text)
    assert most == round(cost.max() * 100) and median == round(cost.median() * 100)


def test_bytes_per_token_names_the_most_and_the_fewest(results):
    rows = at_largest(results, SHARED_SCOPE)
    text = takeaway("Bytes per token", results, None)
    _, most, fewest = numbers(text)
    assert most == round(rows["bytes_per_token"].max(), 2)
    assert fewest == round(rows["bytes_per_token"].min(), 2)
    assert text.index(language_name(rows.loc[rows["bytes_per_token"].idxmax(), "lang"])) < \
        text.index(language_name(rows.loc[rows["bytes_per_token"].idxmin(), "lang"]))


def test_steadiness_gives_the_widest_interval_and_the_median_width(results):
    text = takeaway("How steady is the tax?", results, None)
    width, low, high = numbers(text)
    rows = at_largest(results, SHARED_SCOPE)  # the headline vocabulary: shared at its largest
    rows = rows[rows["lang"] != results.run.pivot]
    half = (rows["premium_ci_high"] - rows["premium_ci_low"]) / rows["premium"] / 2
    wide = rows.loc[half.idxmax()]
    assert width == round(half.median() * 100, 1)
    assert (low, high) == (round(wide["premium_ci_low"], 2), round(wide["premium_ci_high"], 2))
    assert language_name(wide["lang"]) in text


def test_parity_says_what_the_parity_vocabulary_does_to_the_highest_premium(results):
    summaries = results["summaries"]
    at = summaries[summaries["size"] == max(results.run.sizes)]
    shared, fair = (at[at["vocab"] == scope].iloc[0] for scope in (SHARED_SCOPE, PARITY_SCOPE))
    size, before, after, more = numbers(takeaway("What parity costs", results, None))
    assert (size, before, after) == (max(results.run.sizes), round(shared["worst_premium"], 2),
                                     round(fair["worst_premium"], 2))
    assert more == round((fair["tokens"] / shared["tokens"] - 1) * 100, 1)
