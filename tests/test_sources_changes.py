"""A training source's files changing under a run (issue 50, item 13): a file that is not the
one registered is refused before it is read, one that changes while it is read fails the run,
naming it, and nothing read from it is trained on or cached."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_sources import make_source, tiny_corpus

from analyzer.corpus import read_corpus
from analyzer.runs import RunError, RunSettings, counting, execute_run
from analyzer.store import load_merges, open_db, save_corpus

SETTINGS = RunSettings(sizes=[262], pretokenizers=["words"], train_on="mono")
ENGLISH = [f"the {word} sat on a mat near {word}s" for word in ("cat", "dog", "owl", "ant")] * 40


def a_source(tmp_path: Path):
    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    make_source(db, tmp_path / "mono", {"eng_Latn": [ENGLISH], "fra_Latn": [["le chat"] * 20]},
                [("text", None)])
    return db, next((tmp_path / "mono" / "eng_Latn").iterdir())


def entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "a.db.chunks").glob("*.arrow"))


def clean_merges(tmp_path: Path) -> list:
    """The merges of a run on the same source, never changed, in a database of its own."""
    (tmp_path / "clean").mkdir()
    db, _ = a_source(tmp_path / "clean")
    return load_merges(db, execute_run(db, SETTINGS), "shared", "words")


def set_back(path: Path, content: bytes, status: os.stat_result) -> None:
    """`content` written into `path`, its time set back to `status`'s."""
    path.write_bytes(content)
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))


def test_a_file_rewritten_before_the_run_keeping_its_size_and_time_is_refused(tmp_path):
    """The same size, the time set back: its SHA-256 tells it, and nothing is cached."""
    db, target = a_source(tmp_path)
    status = target.stat()
    content = target.read_bytes()
    set_back(target, content.replace(b"cat", b"cow"), status)
    with pytest.raises(RunError, match="is not the file registered") as raised:
        execute_run(db, SETTINGS)
    assert str(target) in str(raised.value)
    assert not any("eng_Latn" in path.read_bytes().decode("latin-1") for path in entries(tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("change", ["cut short", "rewritten, the same size, its time set back",
                                    "replaced"])
def test_a_file_that_changes_while_it_is_read_fails_the_run_and_caches_nothing(
        tmp_path, monkeypatch, change):
    """The file is changed once its first batch is read (an event of the reading, no timing):
    the run fails naming it, no cache entry of its language is written, and once the file is
    as registered again a run counts it whole and trains as a clean run does."""
    db, target = a_source(tmp_path)
    status = target.stat()
    content = target.read_bytes()
    reading = counting.read_documents
    changed = []

    def change_after_the_first_batch(path, *args, **kwargs):
        for number, batch in enumerate(reading(path, *args, **{**kwargs, "batch_bytes": 64})):
            yield batch
            if number == 0 and Path(path) == target and not changed:
                changed.append(change)
                if change == "cut short":
                    target.write_bytes(content[:len(content) // 3])
                elif change == "replaced":
                    other = target.with_name("other")
                    other.write_bytes(content.replace(b"cat", b"cow"))
                    os.utime(other, ns=(status.st_atime_ns, status.st_mtime_ns))
                    other.replace(target)
                else:
                    set_back(target, content.replace(b"cat", b"cow"), status)

    monkeypatch.setattr(counting, "read_documents", change_after_the_first_batch)
    with pytest.raises(RunError, match="changed while this run read it") as raised:
        execute_run(db, SETTINGS)
    assert changed and str(target) in str(raised.value)
    assert entries(tmp_path) == []  # English failed first: nothing of it, nor of French
    monkeypatch.undo()

    set_back(target, content, status)  # restored: as registered again
    stages: list[str] = []
    run = execute_run(db, SETTINGS, stage=stages.append)
    assert "counting eng_Latn" in stages
    assert load_merges(db, run, "shared", "words") == clean_merges(tmp_path)
