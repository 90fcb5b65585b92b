"""Report benchmark: the page of a 58-language NTREX-128 run with 7 sizes (shared vocabulary).

    python benchmarks/bench_report.py

Targets (issue 5): under 10 s to write, and the page under 5 MB without plotly.js.
The run itself comes first (about 80 s here); only the report is timed.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from analyzer.corpus import read_corpus
from analyzer.report import write_report
from analyzer.runs import RunSettings, execute_run
from analyzer.store import open_db, save_corpus

NTREX = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ntrex128" / "text"


def main() -> None:
    if not NTREX.is_dir():
        sys.exit(f"{NTREX} is absent: this benchmark needs the NTREX-128 corpus from ../shared")
    with tempfile.TemporaryDirectory() as tmp:
        db = open_db(Path(tmp) / "bench.db")
        save_corpus(db, read_corpus(NTREX), "ntrex128")
        run_id = execute_run(db, RunSettings(sizes=[512, 1024, 2048, 4096, 8192, 16384, 32768],
                                             per_language=False))
        start = time.perf_counter()
        path = write_report(db, run_id, Path(tmp) / "reports")
        seconds = time.perf_counter() - start
        size = path.stat().st_size
    print(f"report of a 58-language, 7-size NTREX run: {seconds:.1f} s (target < 10 s), "
          f"page {size / 1e6:.2f} MB without plotly.js (target < 5 MB)")


if __name__ == "__main__":
    main()
