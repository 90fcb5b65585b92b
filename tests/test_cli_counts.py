"""`analyzer run --counts NAME=FILE`: counts measured elsewhere, stored beside the run's own,
marked imported everywhere, round-tripping through export, refused when malformed."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from analyzer.store import load_counts, open_db
from helpers import cli_output, dump, invoke


def unit_rows(db, run_id: int, vocab: str) -> list[dict]:
    """A run's `export --units --format csv` rows of one vocabulary."""
    text = cli_output(db, "export", run_id, "--units", "--format", "csv")
    return [row for row in csv.DictReader(io.StringIO(text)) if row["vocab"] == vocab]


def write_counts(path, rows: list[dict], columns=("unit", "lang", "tokens")) -> str:
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(columns)
        writer.writerows([row[column] for column in columns] for row in rows)
    return str(path)


@pytest.fixture
def measured(db, tmp_path):
    """A counts file of every unit of every language: the shared vocabulary's at 300, as an
    export wrote them (as if another tokenizer had counted them)."""
    cli_output(db, "run", "--vocab", "300", "--no-per-language", "--jobs", "1", "--no-report")
    rows = unit_rows(db, 1, "shared")
    assert len(rows) == 3 * 6
    return write_counts(tmp_path / "counts.csv", rows), rows


def test_imported_counts_are_stored_marked_and_round_trip_through_export(db, measured, tmp_path):
    path, rows = measured
    result = invoke(db, "run", "--counts", f"closed-model-1={path}", "--jobs", "1",
                    "--out", tmp_path / "reports")
    assert result.exit_code == 0, result.output
    # the heading in two lines (issue 71: a name, then the models or "imported" under it)
    assert re.search(r"closed-model-1\n\s*language\s+\(imported\)", result.stdout)
    # stored as they were given, unit for unit
    stored = {lang: units for scope, _, _, lang, units in load_counts(open_db(db), 2)
              if scope == "closed-model-1"}
    given: dict[str, list[int]] = {}
    for row in sorted(rows, key=lambda r: int(r["unit"])):
        given.setdefault(row["lang"], []).append(int(row["tokens"]))
    assert stored == given
    # export: the vocabulary is of kind imported, with where its counts came from
    document = json.loads(cli_output(db, "export", "2", "--units"))
    (vocabulary,) = document["vocabularies"]
    assert vocabulary["kind"] == "imported" and vocabulary["library"] == "imported"
    assert "counts.csv (SHA-256 " in vocabulary["source"] and "18 rows" in vocabulary["source"]
    assert {(r["vocab"], r["kind"]) for r in document["records"]} == {("closed-model-1", "imported")}
    units = {entry["lang"]: entry["tokens"] for entry in document["units"]}
    assert units == given
    # the export's unit rows read back as the same counts
    again = write_counts(tmp_path / "again.csv", unit_rows(db, 2, "closed-model-1"))
    cli_output(db, "run", "--counts", f"again={again}", "--no-report")
    assert {lang: units for scope, _, _, lang, units in load_counts(open_db(db), 3)
            if scope == "again"} == given
    # the report says what they are
    page = (tmp_path / "reports" / "run-2.html").read_text(encoding="utf-8")
    assert "closed-model-1 (imported)" in page
    assert "imported counts, measured elsewhere" in page
    # and so do show, the CSV export and merges (which has none to show)
    assert re.search(r"closed-model-1\n\s*language\s+\(imported\)", cli_output(db, "show", "2"))
    records = cli_output(db, "export", "2", "--format", "csv")
    assert ",imported," in records
    result = invoke(db, "merges", "2", "--vocab", "closed-model-1")
    assert result.exit_code == 1 and "holds imported counts: its merges are not stored" in result.output


def test_imported_counts_sit_beside_trained_vocabularies_in_one_run(db, measured):
    path, _ = measured
    cli_output(db, "run", "--vocab", "270", "--counts", f"m={path}", "--jobs", "1", "--no-report")
    document = json.loads(cli_output(db, "show", "2", "--json"))
    vocabs = {(r["vocab"], r["kind"]) for r in document["records"]}
    assert ("m", "imported") in vocabs and ("shared", "shared") in vocabs
    imported = [r for r in document["records"] if r["vocab"] == "m"]
    assert {r["lang"] for r in imported} == {"eng_Latn", "rus_Cyrl", "kor_Hang"}
    assert next(r for r in imported if r["lang"] == "eng_Latn")["premium"] == 1.0


@pytest.mark.parametrize("edit, says", [
    (lambda rows: rows[:-1], "no count for"),
    (lambda rows: rows + [rows[0]], "again (first on line 2)"),
    (lambda rows: [{**rows[0], "tokens": "2.5"}] + rows[1:], "line 2: tokens '2.5' is not a whole number"),
    (lambda rows: [{**rows[0], "unit": "6"}] + rows, "line 2: unit 6 is not in the corpus"),
    (lambda rows: [{**rows[0], "lang": "not a code"}] + rows, "line 2:"),
])
def test_malformed_counts_are_refused_naming_the_line_and_nothing_is_stored(db, measured, tmp_path,
                                                                           edit, says):
    _, rows = measured
    path = write_counts(tmp_path / "bad.csv", edit(rows))
    before = dump(db)
    result = invoke(db, "run", "--counts", f"m={path}", "--vocab", "270")
    assert result.exit_code == 1, result.output
    assert "bad.csv" in result.output and says in result.output, result.output
    assert dump(db) == before


def test_a_counts_name_must_not_be_taken_and_a_run_language_must_be_counted(db, measured):
    path, _ = measured
    for name in ("shared", "rus_Cyrl", "unigram"):
        result = invoke(db, "run", "--counts", f"{name}={path}", "--vocab", "270")
        assert result.exit_code == 1
        assert f"--counts {name}={path}: the name {name!r} is already used" in result.output
    result = invoke(db, "run", "--counts", f"a={path}", "--counts", f"a={path}")
    assert result.exit_code == 1 and "'a' is already used" in result.output
    result = invoke(db, "run", "--counts", "counts.csv")
    assert result.exit_code == 1 and "--counts 'counts.csv': give NAME=FILE" in result.output
    # a run on a subset of the languages uses the rows it needs
    cli_output(db, "run", "--counts", f"m={path}", "--langs", "eng_Latn,kor_Hang", "--no-report")


def test_corpus_texts_are_what_a_provider_counts_and_their_counts_import_by_the_same_index(
        db, tmp_path):
    """The workflow: write the texts, count each elsewhere (here: its characters), import."""
    text = cli_output(db, "corpus", "tiny", "--texts")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 3 * 6 and rows[0] == {"unit": "0", "lang": "eng_Latn",
                                             "text": "the cat sat on the mat"}
    assert next(r for r in rows if r["unit"] == "5" and r["lang"] == "eng_Latn")["text"] == \
        "the cat, the dog, the mat"  # a comma in a text is quoted, and read back whole
    counted = [{"unit": r["unit"], "lang": r["lang"], "tokens": len(r["text"])} for r in rows]
    path = write_counts(tmp_path / "chars.csv", counted)
    cli_output(db, "run", "--counts", f"characters={path}", "--no-report")
    stored = {lang: units for scope, _, _, lang, units in load_counts(open_db(db), 1)}
    assert stored["rus_Cyrl"][0] == len("кот сидел на коврике")
    assert cli_output(db, "corpus", "tiny", "--texts", "--out", tmp_path / "t.csv") == ""
    assert (tmp_path / "t.csv").read_text(encoding="utf-8") == text
    result = invoke(db, "corpus", "tiny", "--out", tmp_path / "t.csv")
    assert result.exit_code == 1 and "--out is for --texts" in result.output
