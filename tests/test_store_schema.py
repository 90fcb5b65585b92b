"""Migrations take any database to the current schema; models mirror it; writes are atomic."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlite_utils import Database
from sqlmodel import SQLModel

from analyzer.corpus import read_corpus
from analyzer.migrations import migrations
from analyzer.store import (
    models,  # noqa: F401  (registers the tables in SQLModel.metadata)
    open_db,
    save_corpus,
)

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "parallel_corpora" / "harbour_town"


def schema(db: Database) -> list[tuple[str, str]]:
    rows = db.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                      "AND name NOT LIKE '_sqlite_migrations%' ORDER BY name").fetchall()
    return [(name, " ".join(sql.split())) for name, sql in rows]


def test_a_fresh_database_gets_every_migration(tmp_path):
    db = open_db(tmp_path / "fresh.db")
    assert [m.name for m in migrations.applied(db)] == [m.name for m in migrations.pending(Database(memory=True))]
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


@pytest.mark.parametrize("stop_before", [m.name for m in migrations.pending(Database(memory=True))])
def test_a_database_at_an_earlier_schema_is_brought_up_to_date(tmp_path, stop_before):
    old = Database(tmp_path / "old.db")
    migrations.apply(old, stop_before=stop_before)
    old.close()
    upgraded = open_db(tmp_path / "old.db")
    assert schema(upgraded) == schema(open_db(tmp_path / "fresh.db"))


def test_opening_twice_applies_nothing_twice(tmp_path):
    open_db(tmp_path / "a.db")
    db = open_db(tmp_path / "a.db")
    names = [m.name for m in migrations.applied(db)]
    assert len(names) == len(set(names))


def test_models_mirror_the_tables(tmp_path):
    db = open_db(tmp_path / "a.db")
    type_names = {"INTEGER": {"INTEGER", "BOOLEAN"}, "TEXT": {"VARCHAR"}, "REAL": {"FLOAT"},
                  "BLOB": {"BLOB", "LARGEBINARY"}}
    for table in SQLModel.metadata.sorted_tables:
        info = {row[1]: row for row in db.execute(f"PRAGMA table_info({table.name})")}
        assert set(info) == set(table.columns.keys()), table.name
        for column in table.columns:
            _, _, declared, notnull, _, pk = info[column.name]
            assert str(column.type).split("(")[0] in type_names[declared], (table.name, column.name)
            assert bool(pk) == column.primary_key, (table.name, column.name)
            if not column.primary_key:
                assert bool(notnull) == (not column.nullable), (table.name, column.name)
    # Only tables the store reads through a model have one; each of those is a real table.
    assert {t.name for t in SQLModel.metadata.sorted_tables} <= set(db.table_names())


def test_a_failure_part_way_through_saving_leaves_nothing_behind(tmp_path):
    db = open_db(tmp_path / "a.db")
    corpus = read_corpus(SAMPLE)
    corpus.texts["zho_Hans"][-1] = None  # fails only after most rows were inserted
    before = list(db.iterdump())
    with pytest.raises(AttributeError):
        save_corpus(db, corpus, "broken")
    assert list(db.iterdump()) == before
    assert db.execute("SELECT count(*) FROM texts").fetchone()[0] == 0


def test_replacing_removes_every_old_row(tmp_path):
    db = open_db(tmp_path / "a.db")
    corpus = read_corpus(SAMPLE)
    save_corpus(db, corpus, "c")
    corpus.texts = {lang: texts[:3] for lang, texts in corpus.texts.items()}
    corpus.unit_ids = corpus.unit_ids[:3]
    assert save_corpus(db, corpus, "c", replace=True) == "replaced"
    assert db.execute("SELECT count(*) FROM texts").fetchone()[0] == 3 * 12
    assert db.execute("SELECT count(*) FROM units").fetchone()[0] == 3


def _write_then_wait(path, n, written, go_on) -> None:
    """In a process of its own: write, say so, wait, write again, close."""
    from analyzer.store import open_db

    db = open_db(path)
    db.execute("UPDATE corpora SET source = ?", [f"first write of {n}"])
    db.conn.commit()
    written.set()
    go_on.wait(60)
    db.execute("UPDATE corpora SET format = ?", [f"second write of {n}"])
    db.conn.commit()
    db.conn.close()


@pytest.mark.slow
def test_opening_a_database_keeps_this_process_s_view_of_other_processes_writes(tiny_db):
    """open_db once read the file's header with Python's open and close, and closing any
    descriptor of a file drops every POSIX lock this process's SQLite connections hold on it:
    then a connection kept here, and every new one, missed what other processes committed."""
    import multiprocessing
    import sqlite3

    from analyzer.store import open_db

    path = tiny_db.path
    kept = sqlite3.connect(path)  # a connection this process keeps (a server, a notebook)
    kept.execute("SELECT count(*) FROM corpora").fetchall()
    context = multiprocessing.get_context("spawn")
    for n in (1, 2, 3):
        open_db(path)  # this process opens the database again
        written, go_on = context.Event(), context.Event()
        writer = context.Process(target=_write_then_wait, args=(path, n, written, go_on))
        writer.start()
        assert written.wait(60)
        fresh = sqlite3.connect(path)
        assert fresh.execute("SELECT source FROM corpora").fetchall() == [(f"first write of {n}",)]
        fresh.close()
        go_on.set()
        writer.join(60)
        assert writer.exitcode == 0
    kept.close()


def test_a_run_s_row_and_its_read_model_hold_every_recorded_setting(tmp_path):
    """`RunSettings` is the one definition: what the row records, the read model returns under
    the same name, and every recorded name is a setting."""
    from analyzer.settings import RECORDED, setting_names
    from analyzer.store.models import RunRead, RunRow

    assert set(RECORDED) <= set(setting_names())
    assert set(RECORDED) <= set(RunRead.model_fields)
    columns = set(RunRow.model_fields)
    from analyzer.store.runs import COLUMN_OF

    assert {COLUMN_OF.get(name, name) for name in RECORDED} <= columns
