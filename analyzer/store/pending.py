"""Finished results that could not be written: kept in a file, stored later by `recover_run`.

When a run's final transaction cannot be written (another process held the write lock past
every retry, or the disk is full), its results are not thrown away: `save_pending` writes them,
with what identifies the run, to a gzipped JSON file beside the database, or, where that
cannot be written (the same full disk, a folder not ours), in the user's cache folder, else
the temporary folder; `analyzer recover FILE` stores them once the database can take them.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

from sqlite_utils import Database

from analyzer.errors import setting
from analyzer.files import write_atomically

from .errors import StoreError
from .runs import VocabularyRecord, finish_run

FORMAT = "analyzer pending results 1"


def pending_paths(db_path: Path, run_id: int) -> list[Path]:
    """Where a run's pending results may go, in the order tried: beside the database, the
    user's cache folder ($XDG_CACHE_HOME or ~/.cache, then analyzer/pending), the temporary
    folder."""
    name = f"{db_path.name}.run-{run_id}.pending.json.gz"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "analyzer" / "pending"
    folders = [db_path.parent if str(db_path.parent) else Path("."), cache,
               Path(tempfile.gettempdir())]
    return [folder / name for folder in dict.fromkeys(folders)]


def find_pending(db_path: Path, run_id: int) -> Path | None:
    """The pending-results file of a run, wherever it was kept; None when there is none."""
    return next((path for path in pending_paths(db_path, run_id) if path.is_file()), None)


def save_pending(db_path: Path, run_id: int, started: str, records: list[VocabularyRecord],
                 seconds: float) -> Path:
    """Write the results to the first of `pending_paths` that takes them (atomically: a
    temporary file, then a rename); the path. StoreError, naming every place tried, when none
    does."""
    document = {
        "format": FORMAT, "database": str(db_path.resolve()), "run": run_id, "started": started,
        "seconds": seconds,
        "vocabularies": [{**asdict(record),
                          "merges": [[*merge[:4], merge[4].hex()] for merge in record.merges],
                          "counts": {str(size): by_lang for size, by_lang in record.counts.items()}}
                         for record in records],
    }
    data = gzip.compress(json.dumps(document).encode())
    failures = []
    for path in pending_paths(db_path, run_id):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, data)
            return path
        except OSError as error:
            failures.append(f"{path.parent}: {error.strerror or error}")
    raise StoreError(f"the results ({len(data):,} bytes) could not be kept anywhere either "
                     f"({'; '.join(failures)}), so they are lost")


def recover_run(db: Database, path: Path) -> int:
    """Store the pending results in `path` for the run they belong to; return its id."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise StoreError(f"{path}: cannot read ({error.strerror})") from None
    try:
        document = json.loads(gzip.decompress(data))
    except (OSError, ValueError, EOFError):  # not gzip, cut short, or not JSON
        raise StoreError(f"{path} is not a pending-results file (damaged, or not one)") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise StoreError(f"{path} is not a pending-results file of this analyzer")
    run_id = document["run"]
    row = db.execute("SELECT started FROM runs WHERE id = ?", [run_id]).fetchone()
    if row is None or row[0] != document["started"]:
        raise StoreError(f"{path} holds results of run {run_id} started {document['started']}, "
                         f"which is not in {getattr(db, 'path', 'this database')}; pass the {setting('db')} "
                         f"it was made for ({document['database']})")
    records = [
        VocabularyRecord(**{**vocabulary,
                            "merges": [(*merge[:4], bytes.fromhex(merge[4]))
                                       for merge in vocabulary["merges"]],
                            "counts": {int(size): by_lang
                                       for size, by_lang in vocabulary["counts"].items()},
                            "histograms": _int_keys(vocabulary.get("histograms")),
                            "models": {int(size): document for size, document
                                       in (vocabulary.get("models") or {}).items()} or None})
        for vocabulary in document["vocabularies"]]
    finish_run(db, run_id, records, document["seconds"])
    return run_id


def _int_keys(histograms: dict | None) -> dict | None:
    """JSON made the sizes and token ids strings: make them ints again."""
    if histograms is None:
        return None
    return {int(size): {lang: {int(token): n for token, n in counts.items()}
                        for lang, counts in by_lang.items()}
            for size, by_lang in histograms.items()}
