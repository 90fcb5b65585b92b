"""Finished results that could not be written: kept in a file, stored later by `recover_run`.

When a run's final transaction cannot be written (another process held the write lock past
every retry, the disk is full, the file was deleted), its results are not thrown away:
`save_pending` writes them, with what identifies the run, to a gzipped JSON file beside the
database, or, where that cannot be written (the same full disk, a folder not ours), in the
user's cache folder, else the temporary folder; `analyzer recover FILE` stores them once the
database can take them.

A file is named, and found again, by the run it belongs to: the database's identity (a random
id it keeps in `meta`, not its file name: two databases named a.db share a cache folder), the
run's id and its start. So one database never takes another's file for its own.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from analyzer.errors import setting
from analyzer.files import cache_folder, write_atomically
from analyzer.identity import VocabKind

from .errors import StoreError
from .results import VocabularyRecord, finish_run
from .sqlite import Database
from .values import MAX_ROW_ID

FORMAT = "analyzer pending results 1"


def database_id(db: Database) -> str | None:
    """The database's own identity (made by migration m012): None in a database too old to
    have one, opened read-only."""
    if "meta" not in db.table_names():
        return None
    row = db.execute("SELECT value FROM meta WHERE key = 'database_id'").fetchone()
    return row[0] if row else None


def pending_paths(db_path: Path, run_id: int, database: str | None, started: str) -> list[Path]:
    """Where a run's pending results may go, in the order tried: beside the database, the
    user's cache folder ($XDG_CACHE_HOME or ~/.cache, then analyzer/pending), the temporary
    folder. The name holds the run (its database's identity, its id and start), not only the
    database's file name."""
    key = hashlib.sha256(f"{database}\0{run_id}\0{started}".encode()).hexdigest()[:16]
    name = f"{db_path.name}.run-{run_id}.{key}.pending.json.gz"
    return [folder / name for folder in _folders(db_path)]


def _folders(db_path: Path) -> list[Path]:
    cache = cache_folder("pending")
    return list(dict.fromkeys([db_path.parent if str(db_path.parent) else Path("."), cache,
                               Path(tempfile.gettempdir())]))


def find_pending(db: Database, db_path: Path, run_id: int, started: str) -> Path | None:
    """The pending-results file of this database's run, wherever it was kept; None when there
    is none. A file of an older analyzer (named by the database's file name only) counts only
    when its content names this database's path and this run's start."""
    found = next((path for path in pending_paths(db_path, run_id, database_id(db), started)
                  if path.is_file()), None)
    if found is not None:
        return found
    for folder in _folders(db_path):
        legacy = folder / f"{db_path.name}.run-{run_id}.pending.json.gz"
        if legacy.is_file():
            try:
                document = _read_document(legacy)
            except StoreError:
                continue
            if (document.get("database") == str(db_path.resolve())
                    and document.get("started") == started):
                return legacy
    return None


def save_pending(db: Database, db_path: Path, run_id: int, started: str,
                 records: list[VocabularyRecord], seconds: float) -> Path:
    """Write the results to the first of `pending_paths` that takes them (atomically: a
    temporary file, then a rename); the path. StoreError, naming every place tried, when none
    does."""
    database = database_id(db)
    document = {
        "format": FORMAT, "database": str(db_path.resolve()), "database_id": database,
        "run": run_id, "started": started, "seconds": seconds,
        "vocabularies": [{**asdict(record),
                          "merges": [[*merge[:4], merge[4].hex()] for merge in record.merges],
                          "counts": {str(size): by_lang for size, by_lang in record.counts.items()}}
                         for record in records],
    }
    data = gzip.compress(json.dumps(document).encode())
    failures = []
    for path in pending_paths(db_path, run_id, database, started):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, data)
            return path
        except OSError as error:
            failures.append(f"{path.parent}: {error.strerror or error}")
    raise StoreError(f"the results ({len(data):,} bytes) could not be kept anywhere either "
                     f"({'; '.join(failures)}), so they are lost")


def _read_document(path: Path) -> dict[str, Any]:
    """The JSON document of a pending-results file; StoreError when it is not one."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise StoreError(f"{path}: cannot read ({error.strerror})") from None
    try:
        document = json.loads(gzip.decompress(data))
    except (OSError, ValueError, EOFError, RecursionError):  # not gzip, cut short, not JSON
        raise StoreError(f"{path} is not a pending-results file (damaged, or not one)") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise StoreError(f"{path} is not a pending-results file of this analyzer")
    return document


REQUIRED: dict[str, type | tuple[type, ...]] = {
    "run": int, "started": str, "seconds": (int, float), "vocabularies": list, "database": str}
"""The fields every pending-results file has, and their JSON types."""


def recover_run(db: Database, path: Path) -> int:
    """Store the pending results in `path` for the run they belong to; return its id."""
    document = _read_document(path)
    for name, kind in REQUIRED.items():
        if not isinstance(document.get(name), kind) or isinstance(document.get(name), bool):
            raise StoreError(f"{path} is damaged: its field {name!r} is "
                             f"{'missing' if name not in document else 'not what it should be'}; "
                             "nothing was stored")
    run_id = document["run"]
    row = db.execute("SELECT started FROM runs WHERE id = ?", [run_id]).fetchone() \
        if 1 <= run_id <= MAX_ROW_ID else None
    made_for = document.get("database_id")
    if row is None or row[0] != document["started"] or (made_for and made_for != database_id(db)):
        raise StoreError(f"{path} holds results of run {run_id} started {document['started']}, "
                         f"which is not in {getattr(db, 'path', 'this database')}; pass the {setting('db')} "
                         f"it was made for ({document['database']})")
    try:
        records = [_record(vocabulary) for vocabulary in document["vocabularies"]]
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
        raise StoreError(f"{path} is damaged: a vocabulary's results cannot be read "
                         f"({type(error).__name__}: {error}); nothing was stored") from None
    finish_run(db, run_id, records, document["seconds"])
    return run_id


def _record(vocabulary: dict) -> VocabularyRecord:
    """One vocabulary's record from its JSON form (sizes and ids were made strings)."""
    return VocabularyRecord(**{
        **vocabulary,
        "kind": VocabKind(vocabulary["kind"]),
        "merges": [(*merge[:4], bytes.fromhex(merge[4])) for merge in vocabulary["merges"]],
        "counts": {int(size): by_lang for size, by_lang in vocabulary["counts"].items()},
        "joined": {int(size): by_lang for size, by_lang
                   in (vocabulary.get("joined") or {}).items()} or None,
        "overlaps": {other: tuple(pair) for other, pair
                     in (vocabulary.get("overlaps") or {}).items()} or None,
        "histograms": _int_keys(vocabulary.get("histograms")),
        "models": {int(size): model for size, model
                   in (vocabulary.get("models") or {}).items()} or None})


def _int_keys(histograms: dict | None) -> dict | None:
    """JSON made the sizes and token ids strings: make them ints again."""
    if histograms is None:
        return None
    return {int(size): {lang: {int(token): n for token, n in counts.items()}
                        for lang, counts in by_lang.items()}
            for size, by_lang in histograms.items()}
