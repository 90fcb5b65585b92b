"""Ingest benchmark: NTREX-128 (58 languages x 1501 units, 20 MB) into a fresh database.

    python benchmarks/bench_ingest.py

Targets (issue 3): under 10 s; a database under 2x the text's size.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from analyzer.corpus import read_corpus
from analyzer.store import open_db, save_corpus

NTREX = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ntrex128" / "text"


def main() -> None:
    if not NTREX.is_dir():
        sys.exit(f"{NTREX} is absent: this benchmark needs the NTREX-128 corpus from ../shared")
    text_bytes = sum(path.stat().st_size for path in NTREX.glob("*.txt"))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        start = time.perf_counter()
        corpus = read_corpus(NTREX)
        read = time.perf_counter() - start
        db = open_db(path)
        save_corpus(db, corpus, "ntrex128")
        total = time.perf_counter() - start
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = path.stat().st_size
    print(f"NTREX-128: {len(corpus.languages)} languages x {corpus.n_units} units, "
          f"{text_bytes / 1e6:.1f} MB of text")
    print(f"read and check {read:.2f} s, total ingest {total:.2f} s (target < 10 s)")
    print(f"database {size / 1e6:.1f} MB = {size / text_bytes:.2f}x the text (target < 2x)")


if __name__ == "__main__":
    main()
