"""Results never drift: two runs on the sample corpus equal what the first vertical slice stored.

The golden file was written by tests/golden/make_golden.py at the end of the first slice.
Every merge, every per-unit count and the documented JSON must stay the same through engine
and layout changes (clock fields aside).
"""

from __future__ import annotations

import gzip
import json

import pytest

from golden.make_golden import EVERY_KIND, GOLDEN, make, make_every_kind


@pytest.fixture(scope="module")
def golden_and_now():
    return json.loads(gzip.decompress(GOLDEN.read_bytes())), make()


@pytest.mark.slow
@pytest.mark.parametrize("index", [0, 1])
def test_stored_merges_and_counts_are_unchanged(golden_and_now, index):
    golden, now = golden_and_now
    assert now[index]["merges"] == golden[index]["merges"]
    assert now[index]["counts"] == golden[index]["counts"]


ADDED_TO_RECORDS = ("pretokenizer", "chunks", "chunk_premium",  # issue 12: pre-tokenizers
                    "utilisation", "mean_rank", "renyi_efficiency",  # issue 14: allocation
                    "kind",  # issue 27: imported counts are told apart in every record
                    "char_fertility", "word_split_pct",  # issue 40: the field's metrics
                    *("unit_premium", "unit_premium_ci_low",  # issue 71: the mean of unit
                      "unit_premium_ci_high"))  # ratios beside the ratio of totals
ADDED_TO_VOCABULARIES = ("pretokenizer", "pattern",
                         "transition",  # issue 23: SuperBPE
                         "base_size",  # issue 23: extensions
                         "framing", "framing_basis",  # issue 27: a request's framing
                         "special_tokens",  # issue 40: what a library adds to each text
                         "engine")  # issue 69: what counted a production tokenizer
ADDED_TO_RUNS = ("pretokenizers",  # issue 12
                 "parity", "global_merges", "weights",  # issue 14: the fairness lab
                 "summaries", "equal_cost_sizes", "attribution", "divergence",
                 "superbpe", "superbpe_effects", "own_superbpe_effects",  # issue 23: SuperBPE
                 "extend", "added", "extend_langs", "target",  # issue 23: extensions
                 "extension_effects", "extension_reach",
                 "algorithms", "algorithm_premiums",  # issue 24: the algorithm as a variable
                 "train_on", "train_bytes", "mix", "skip_invalid", "training",  # issue 39: sources
                 "min_chunk_count",  # issue 54: the count floor
                 "count", "special_tokens",  # issue 40: counting conventions
                 "vocabulary_scripts", "vocabulary_overlaps",  # and production vocabularies
                 "verdicts", "model_costs",  # issue 71: the verdicts, the costs in numbers
                 "reference",  # and what the premiums are against (the pivot, unless asked)
                 "estimators",  # issue 71: which estimator each premium field is
                 "tokenizers")  # issue 71: the tokenizers measured, with their models


def without(document: dict, keys) -> dict:
    return {key: value for key, value in document.items() if key not in keys}


def as_first_slice_wrote_it(document: dict) -> dict:
    """The document without what later issues deliberately added: fields for pre-tokenizers
    (all "none" or null in these runs), and a vocabulary's `kind` saying which kind it is
    (shared, language) where the first slice said only "trained"."""
    old = {"shared": "trained", "language": "trained", "production": "production"}
    document = without(document, ADDED_TO_RUNS)
    document["records"] = [without(record, ADDED_TO_RECORDS) for record in document["records"]]
    if "vocabularies" in document:
        document["vocabularies"] = [{**without(v, ADDED_TO_VOCABULARIES), "kind": old[v["kind"]]}
                                    for v in document["vocabularies"]]
    return document


@pytest.mark.parametrize("index", [0, 1])
def test_show_json_and_export_are_unchanged(golden_and_now, index):
    golden, now = golden_and_now
    assert as_first_slice_wrote_it(now[index]["show"]) == golden[index]["show"]
    assert as_first_slice_wrote_it(now[index]["export"]) == golden[index]["export"]
    assert {r["pretokenizer"] for r in now[index]["show"]["records"]} == {"none"}
    kinds = {v["scope"]: v["kind"] for v in now[index]["export"]["vocabularies"]}
    assert kinds.pop("shared") == "shared" and set(kinds.values()) <= {"language"}


@pytest.fixture(scope="module")
def every_kind():
    """The every-kind run as written before issue 38's restructuring, and now."""
    pytest.importorskip("tokenizers", reason="Unigram and WordPiece need the tokenizers extra")
    return json.loads(gzip.decompress(EVERY_KIND.read_bytes())), make_every_kind()


ADDED_BY_SOURCES = ("train_on", "train_bytes", "mix", "skip_invalid", "training",
                    "min_chunk_count")
"""The run's settings of training on a source (issues 39 and 54): null or their defaults
here."""
ADDED_BY_COUNTING = ("count", "special_tokens")
"""The run's counting conventions (issue 40): their defaults here."""


ADDED_BY_METRICS = ("vocabulary_scripts", "vocabulary_overlaps", "verdicts", "model_costs",
                    "reference", "estimators")
"""The production vocabularies' sections (issue 40); the verdicts, the costs in numbers, the
reference and which estimator each premium field is (issue 71)."""
NEW_RECORD_KEYS = ("char_fertility", "word_split_pct",
                   "unit_premium", "unit_premium_ci_low", "unit_premium_ci_high")
"""Issue 40's metrics in every record, and issue 71's mean of unit ratios."""
ADDED_TO_CSV = ("language", "models", "reference", "estimators", "run")
"""Issue 71: what a CSV read on its own needs beside the records' fields."""


def without_names(document: dict) -> dict:
    """A show or export document without issue 71's tokenizers' models (checked to be
    there: `tokenizers` in show, each tokenizer's `models` in the token report)."""
    if "token_report" in document:
        tokenizers = document["token_report"]["tokenizers"]
        assert all("models" in entry for entry in tokenizers.values())
        document["token_report"] = {**document["token_report"], "tokenizers": {
            name: without(entry, ("models",)) for name, entry in tokenizers.items()}}
    else:
        assert "tokenizers" in document
    return without(document, ("tokenizers",))


def without_metrics(document: dict) -> dict:
    """A show or export document without issue 40's metrics (checked to be there)."""
    assert all(key in document for key in ADDED_BY_METRICS)
    document = without(document, ADDED_BY_METRICS)
    document["records"] = [without(record, NEW_RECORD_KEYS) for record in document["records"]]
    return document


def csv_without_metrics(text: str) -> str:
    """The CSV export without issue 40's record columns."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text)))
    assert all(name in rows[0] for name in ADDED_TO_CSV)
    keep = [i for i, name in enumerate(rows[0]) if name not in NEW_RECORD_KEYS + ADDED_TO_CSV]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([[row[i] for i in keep] for row in rows])
    return out.getvalue()


ESTIMATORS_NOTE = "Premiums are the ratio of totals"
"""Where `show`'s last note begins: which estimator its premiums are (issue 71)."""


def without_estimators_note(text: str) -> str:
    """`show`'s text without issue 71's note naming the estimators (checked to be there)."""
    head, found, _ = text.partition(ESTIMATORS_NOTE)
    assert found
    return head


def without_vocabularies_table(text: str) -> str:
    """`show`'s tables without issue 40's table of production vocabularies (the last), and
    without issue 71's verdicts (the sentences before the first table)."""
    head, found, _ = text.partition("Production vocabularies")
    assert found
    verdicts, first, tables = head.partition("Run 1 on ")
    assert verdicts.startswith("The cheapest for these languages is ") and first
    return first + tables[:tables.rfind("\n") + 1]  # up to the title's line


def without_counting(document: dict) -> dict:
    """A run's document without issue 40's settings (checked to be their defaults) and its
    production tokenizers' `special_tokens` (what their libraries add: none for these)."""
    assert {key: document[key] for key in ADDED_BY_COUNTING} == {"count": "units",
                                                                "special_tokens": False}
    document = without(document, ADDED_BY_COUNTING)
    if "vocabularies" in document:
        assert all(v["special_tokens"] in (None, 0) for v in document["vocabularies"])
        # issue 69: what counted each production tokenizer (the analyzer's engine here)
        assert all(v["engine"] == ("analyzer" if v["kind"] == "production" else None)
                   for v in document["vocabularies"])
        document["vocabularies"] = [without(v, ("special_tokens", "engine"))
                                    for v in document["vocabularies"]]
    return document


@pytest.mark.slow
@pytest.mark.parametrize("part", ["merges", "counts", "show", "export", "export_csv",
                                  "export_units_csv", "export_units", "show_tables", "show_parity",
                                  "merges_by_language", "runs"])
def test_a_run_of_every_kind_of_vocabulary_is_unchanged(every_kind, part):
    """Every kind of vocabulary in one run: what is stored and everything the command line
    prints of it, byte for byte (clock fields and this machine's paths aside), as before the
    architecture of issue 38. The Unigram vocabularies' parts were written anew at issue 42,
    when the analyzer's own engine took over Unigram training (only they changed); the tables'
    text at issue 50, when tables stopped breaking names and headers across lines (and soft wrap
    stopped centring titles and folding long lines in a pipe); and at issue 52, when tables
    became one line per language of premiums (`2.31x`) and merges the text they stand for.
    Issue 71's note naming the estimators is left out (`without_estimators_note`)."""
    golden, now = every_kind
    found = now[part]
    if part == "export":
        assert {key: found[key] for key in ADDED_BY_SOURCES} == {
            "train_on": None, "train_bytes": None, "mix": "natural", "skip_invalid": False,
            "training": None, "min_chunk_count": 1}
        found = without_names(without_metrics(without_counting(without(found,
                                                                       ADDED_BY_SOURCES))))
    if part == "show":
        found = without_names(without_metrics(found))
    if part == "export_csv":
        found = csv_without_metrics(found)
    if part == "show_tables":
        found = without_vocabularies_table(found)
    if part == "show_parity":
        found = without_estimators_note(found)
    if part == "runs":
        found = [without_counting(without(run, ADDED_BY_SOURCES)) for run in found]
    assert found == golden[part]


def test_every_trained_vocabulary_s_merges_print_unchanged(every_kind):
    golden, now = every_kind
    assert set(now["merges"]) == set(golden["merges"])
    for name, printed in golden["merges"].items():
        assert now["merges"][name] == printed, name
