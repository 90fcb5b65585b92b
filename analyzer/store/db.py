"""Open the analyzer's SQLite database: one function, migrations applied on first use."""

from __future__ import annotations

import os
from pathlib import Path

from sqlite_utils import Database

from analyzer.migrations import migrations

DEFAULT_DB = "analyzer.db"
DB_ENV = "ANALYZER_DB"


def default_db_path() -> Path:
    """`$ANALYZER_DB`, else ./analyzer.db."""
    return Path(os.environ.get(DB_ENV) or DEFAULT_DB)


def open_db(path: Path | str | None = None) -> Database:
    """The database at `path` (created if absent), WAL mode, foreign keys on, schema current."""
    path = Path(path) if path is not None else default_db_path()
    if path.parent and not path.parent.exists():
        raise FileNotFoundError(f"{path.parent}: no such folder for the database")
    db = Database(path)
    db.execute("PRAGMA foreign_keys = ON")
    db.enable_wal()
    migrations.apply(db)
    return db
