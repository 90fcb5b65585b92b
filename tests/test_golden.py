"""Results never drift: two runs on the sample corpus equal what the first vertical slice stored.

The golden file was written by tests/golden/make_golden.py at the end of the first slice.
Every merge, every per-unit count and the documented JSON must stay the same through engine
and layout changes (clock fields aside).
"""

from __future__ import annotations

import gzip
import json

import pytest

from golden.make_golden import GOLDEN, make


@pytest.fixture(scope="module")
def golden_and_now():
    return json.loads(gzip.decompress(GOLDEN.read_bytes())), make()


@pytest.mark.parametrize("index", [0, 1])
def test_stored_merges_and_counts_are_unchanged(golden_and_now, index):
    golden, now = golden_and_now
    assert now[index]["merges"] == golden[index]["merges"]
    assert now[index]["counts"] == golden[index]["counts"]


def as_first_slice_wrote_it(export: dict) -> dict:
    """The one deliberate change to the export since the golden file: a vocabulary's `kind`
    says which kind it is (shared, language) where the first slice said only "trained"."""
    old = {"shared": "trained", "language": "trained", "production": "production"}
    vocabularies = [{**v, "kind": old[v["kind"]]} for v in export["vocabularies"]]
    return {**export, "vocabularies": vocabularies}


@pytest.mark.parametrize("index", [0, 1])
def test_show_json_and_export_are_unchanged(golden_and_now, index):
    golden, now = golden_and_now
    assert now[index]["show"] == golden[index]["show"]
    assert as_first_slice_wrote_it(now[index]["export"]) == golden[index]["export"]
    kinds = {v["scope"]: v["kind"] for v in now[index]["export"]["vocabularies"]}
    assert kinds.pop("shared") == "shared" and set(kinds.values()) <= {"language"}
