"""The chunk-count cache trusts no entry (issue 50, item 15): each entry carries its key and a
checksum, and one that is damaged in any way (bytes flipped, rows dropped or replaced, columns
of other types, counts out of bounds) is counted again, said, and never changes a result nor
ends a run with an internal error. A run served from the cache records its own budget."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from test_sources import make_source, tiny_corpus

from analyzer.corpus import read_corpus
from analyzer.runs import RunSettings, execute_run
from analyzer.runs.chunk_cache import DamagedEntry, read_entry
from analyzer.store import get_run, load_merges, open_db, save_corpus

SETTINGS = RunSettings(sizes=[262], pretokenizers=["words"], train_on="mono")


def a_source(tmp_path: Path):
    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    make_source(db, tmp_path / "mono", {
        "eng_Latn": [[f"the {word} sat on the mat" for word in ("cat", "dog", "owl")] * 30],
        "fra_Latn": [[f"le {word} dort" for word in ("chat", "chien")] * 30]}, [("text", None)])
    return db


def entry_of(tmp_path: Path, lang: str) -> Path:
    for path in (tmp_path / "a.db.chunks").glob("*.arrow"):
        if read_entry(path)[1]["lang"] == lang:
            return path
    raise AssertionError(f"no entry of {lang}")


def rewritten(path: Path, change: Callable[[pa.Table], pa.Table], about: dict | None = None
              ) -> None:
    """The entry written again with `change` made to its table, its metadata kept (or
    `about`): what a damaged disk, a bad copy or another program could leave."""
    with pa.memory_map(str(path)) as source:
        table = ipc.open_file(source).read_all()
    metadata = table.schema.metadata
    if about is not None:
        metadata = {b"analyzer": json.dumps(about).encode()}
    table = change(table).replace_schema_metadata(metadata)
    with ipc.new_file(str(path), table.schema) as writer:
        writer.write_table(table)


def counts_of(values, type_=None) -> Callable[[pa.Table], pa.Table]:
    def change(table: pa.Table) -> pa.Table:
        new = pa.array(values(table.column("count").to_numpy()), type=type_)
        return table.set_column(1, pa.field("count", new.type), new)
    return change


def flip_a_byte(path: Path, _: Path) -> None:
    """A byte of a chunk's text changed (still UTF-8, the file still whole)."""
    data = bytearray(path.read_bytes())
    at = data.index(b"owl")
    data[at] = ord("a")
    path.write_bytes(bytes(data))


DAMAGES: dict[str, Callable[[Path, Path], None]] = {
    "a flipped byte": flip_a_byte,
    "zero rows": lambda path, _: rewritten(path, lambda table: table.slice(0, 0)),
    "a chunk dropped": lambda path, _: rewritten(path, lambda table: table.slice(1)),
    "another language's chunks": lambda path, other: rewritten(
        path, lambda _: ipc.open_file(pa.memory_map(str(other))).read_all()),
    "another entry copied over it": lambda path, other: path.write_bytes(other.read_bytes()),
    "counts as floats": lambda path, _: rewritten(path, counts_of(lambda c: c + 0.5)),
    "counts as text": lambda path, _: rewritten(path, counts_of(lambda c: c.astype(str))),
    "negative counts": lambda path, _: rewritten(path, counts_of(lambda c: -c)),
    "zero counts": lambda path, _: rewritten(path, counts_of(lambda c: c * 0)),
    "huge counts": lambda path, _: rewritten(path, counts_of(lambda c: c * 0 + (1 << 62))),
    "a count of 2**63 - 1": lambda path, _: rewritten(
        path, counts_of(lambda c: np.where(np.arange(len(c)) == 0, (1 << 63) - 1, c))),
    "cut short": lambda path, _: path.write_bytes(path.read_bytes()[:200]),
    "no metadata": lambda path, _: rewritten(path, lambda table: table, about={}),
}


@pytest.mark.slow
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_entry_is_counted_again_and_said(tmp_path, damage):
    db = a_source(tmp_path)
    first = execute_run(db, SETTINGS)
    clean = get_run(db, first).training["languages"]
    english, french = entry_of(tmp_path, "eng_Latn"), entry_of(tmp_path, "fra_Latn")
    DAMAGES[damage](english, french)
    with pytest.raises(DamagedEntry):
        read_entry(english)
    stages: list[str] = []
    second = execute_run(db, SETTINGS, stage=stages.append)
    said = [stage for stage in stages if "chunk-count cache's entry for eng_Latn" in stage]
    assert said and said[0].endswith("was damaged (" + said[0].split(" (", 2)[2]), stages
    assert "counting eng_Latn" in stages and "counting fra_Latn" not in stages
    assert load_merges(db, second, "shared", "words") == load_merges(db, first, "shared", "words")
    recorded = get_run(db, second).training["languages"]
    assert recorded[0].pop("cache_notes") == [said[0]]
    assert recorded == clean
    read_entry(english)  # written anew, whole
    third: list[str] = []
    execute_run(db, SETTINGS, stage=third.append)
    assert not any(stage.startswith("counting") for stage in third)


def test_the_cli_says_a_damaged_entry_and_never_exits_70(tmp_path):
    from helpers import invoke

    db = a_source(tmp_path)
    execute_run(db, SETTINGS)
    english = entry_of(tmp_path, "eng_Latn")
    rewritten(english, counts_of(lambda c: c + 0.5))
    run = invoke(tmp_path / "a.db", "run", "--vocab", "262", "--train-on", "mono",
                 "--pretokenize", "words", "--no-report", "--jobs", "1")
    assert run.exit_code == 0, run.output
    shown = invoke(tmp_path / "a.db", "show", "2").output
    assert "The chunk-count cache's entry for eng_Latn (words) was damaged" in " ".join(
        shown.split())
    # issue 52: the per-language sample, as the training-sources tutorial says
    assert "Training sample from source mono" in shown
    sample = [line for line in shown.splitlines() if line.startswith("eng_Latn English ")]
    assert sample and re.search(r"\d(\.\d)? (B|kB|MB) +\d", sample[-1]), shown  # bytes, documents


def test_a_run_served_from_the_cache_records_its_own_budget(tmp_path):
    """The entry was written by a run that asked more than the source has (the same sample:
    all of it): a run that asks nothing is not 'short', and records no budget of the other's."""
    from analyzer.cli.notes import training_notes

    db = a_source(tmp_path)
    asked = execute_run(db, RunSettings(sizes=[262], pretokenizers=["words"], train_on="mono",
                                        train_bytes=1 << 30))
    training = get_run(db, asked).training
    assert all(item["short"] for item in training["languages"])
    assert any("less than asked" in line for line in training_notes(training))
    stages: list[str] = []
    cached = execute_run(db, SETTINGS, stage=stages.append)
    assert not any(stage.startswith("counting") for stage in stages)  # served from the cache
    training = get_run(db, cached).training
    assert training["train_bytes"] is None
    for item in training["languages"]:
        assert not item["short"] and item["budget"] != 1 << 30 >> 1, item
    assert not any("less than asked" in line for line in training_notes(training))


@pytest.mark.slow
@pytest.mark.cluster
def test_a_damaged_entry_is_counted_again_on_a_dask_cluster(tmp_path):
    pytest.importorskip("distributed")
    db = a_source(tmp_path)
    on_dask = RunSettings(sizes=[262], pretokenizers=["words"], train_on="mono", executor="dask",
                          jobs=2)
    first = execute_run(db, on_dask)
    english = entry_of(tmp_path, "eng_Latn")
    rewritten(english, counts_of(lambda c: -c))
    second = execute_run(db, on_dask)
    recorded = get_run(db, second).training["languages"]
    assert "was damaged (its counts are not whole numbers" in recorded[0]["cache_notes"][0]
    assert load_merges(db, second, "shared", "words") == load_merges(db, first, "shared", "words")
    read_entry(english)


def test_what_stands_where_an_entry_goes_is_replaced_never_followed_or_written_into(tmp_path):
    """A link (to a file elsewhere, or to nothing) or a named pipe where an entry goes is not
    an entry: the language is counted again and the entry written in its place. Writing through
    the link changed a file outside the cache (or was exit 70 for a link to nothing), and
    writing into the pipe hung."""
    db = a_source(tmp_path)
    first = execute_run(db, SETTINGS)
    english = entry_of(tmp_path, "eng_Latn")
    elsewhere = tmp_path / "notes.txt"  # a user's file, not an entry
    elsewhere.write_text("mine\n")
    for stand_in in ("link to a file", "link to nothing", "named pipe"):
        english.unlink()
        if stand_in == "link to a file":
            english.symlink_to(elsewhere)
        elif stand_in == "link to nothing":
            english.symlink_to(tmp_path / "nothing" / "here")
        else:
            os.mkfifo(english)
        stages: list[str] = []
        again = execute_run(db, SETTINGS, stage=stages.append)
        assert "counting eng_Latn" in stages, stand_in
        assert english.is_file() and not english.is_symlink(), stand_in
        read_entry(english)
        assert load_merges(db, again, "shared", "words") == load_merges(db, first, "shared",
                                                                         "words")
    assert elsewhere.read_text() == "mine\n"


def test_a_folder_where_an_entry_or_the_cache_goes_is_refused_before_counting(tmp_path):
    """A folder where an entry goes could not be written (exit 70 after the whole counting
    pass), nor could a cache whose folder is a link to nothing: both refused when the run
    starts, naming them."""
    from helpers import invoke

    db = a_source(tmp_path)
    execute_run(db, SETTINGS)
    english = entry_of(tmp_path, "eng_Latn")
    english.unlink()
    english.mkdir()
    command = ("run", "--vocab", "262", "--train-on", "mono", "--pretokenize", "words",
               "--no-report", "--jobs", "1")
    run = invoke(tmp_path / "a.db", *command)
    assert run.exit_code == 1, run.output
    assert english.name in "".join(run.output.split()) and "is a folder" in run.output
    assert "counting eng_Latn" not in run.output
    english.rmdir()
    cache = tmp_path / "a.db.chunks"
    cache.rename(tmp_path / "moved")
    cache.symlink_to(tmp_path / "gone")
    run = invoke(tmp_path / "a.db", *command)
    assert run.exit_code == 1, run.output
    assert "is a link to nothing" in run.output


def test_the_cache_is_not_cleared_under_a_run_that_uses_it(tmp_path):
    """Issue 50, item 18: `sources clear-cache` during a run removed the entries it had just
    counted, and the run failed with an internal error (exit 70) when it came to train."""
    from helpers import invoke

    db = a_source(tmp_path)
    said: list[tuple[int, str]] = []

    def report(label, stage, done, total):
        if label.startswith("source") and stage == "done":  # counted: the entries are written
            result = invoke(db.path, "sources", "clear-cache")
            said.append((result.exit_code, result.output))

    run_id = execute_run(db, SETTINGS, report=report)
    assert get_run(db, run_id).status == "complete"
    [(code, output)] = said
    assert code == 1 and "is in use by a run now; nothing was removed" in output, output
    assert len(list((tmp_path / "a.db.chunks").glob("*.arrow"))) == 2  # both kept
    result = invoke(db.path, "sources", "clear-cache")  # the run has ended: cleared now
    assert result.exit_code == 0 and "Removed 2 cached chunk counts" in result.output


def test_sources_remove_during_a_run_removes_the_source_and_leaves_the_entries(tmp_path):
    from helpers import invoke

    db = a_source(tmp_path)
    said: list[str] = []

    def report(label, stage, done, total):
        if label.startswith("source") and stage == "done":
            said.append(invoke(db.path, "sources", "remove", "mono").output)

    execute_run(db, SETTINGS, report=report)
    assert "Its cached chunk counts stay for now: a run is using the cache" in " ".join(
        said[0].split())
    assert invoke(db.path, "sources").output.startswith("No training sources yet")


def test_a_pattern_that_runs_away_on_a_source_s_text_is_refused_naming_the_document(tmp_path):
    """Issue 50, item 18: refused cleanly on a corpus and in `train`, but exit 70 when it ran
    away on a training source's text."""
    from helpers import dump, invoke

    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    make_source(db, tmp_path / "mono", {
        "eng_Latn": [["the cat sat"] * 3 + ["a" * 40 + "!"]],
        "fra_Latn": [["le chat dort"] * 3]}, [("text", None)])
    before = dump(db.path)
    result = invoke(db.path, "run", "--train-on", "mono", "--vocab", "262", "--jobs", "1",
                    "--no-report", "--pretokenize", r"re:(?:a|a)*c|[\s\S]")
    assert result.exit_code == 1, result.output
    assert ("--pretokenize re:(?:a|a)*c|[\\s\\S] runs away: training source 'mono', eng_Latn, "
            in result.output), result.output
    assert "document 4, the pattern ran for more than 1 s" in result.output
    assert "nothing was stored" in result.output
    # The run was recorded before the source was read (a client is answered then): it is
    # marked failed, saying why, and nothing else of it is stored, nor cached.
    [run] = [get_run(db, run_id) for run_id in (1,)]
    assert run.status == "failed" and "runs away" in (run.error or "")
    assert [line for line in dump(db.path) if '"runs"' not in line] == before
    assert not list((tmp_path / "a.db.chunks").glob("*.arrow"))
