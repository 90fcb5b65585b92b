"""Report and export benchmark: a run's page, its JSON export and its per-unit CSV at 12, 60
and 200 languages, each timed in a fresh process with its peak memory.

    python benchmarks/bench_report.py                 # 12, 60 and 200 languages
    python benchmarks/bench_report.py --languages 60  # one size

The corpus: NTREX-128's first 1,000 sentences, its 58 languages' files copied under real
FLORES-200 codes (so that scripts, names and their lengths are realistic), as many as asked
for. The run: shared and per-language vocabularies at 1,024 and 4,096 under the `none` and
`words` pre-tokenizers, parity-aware, and cl100k_base and o200k_base (the shape of a study that
made the report slow: issue 25). The run itself comes first (about a minute at 200 languages)
and is not timed.

Targets (issue 25): at 200 languages, the report and the export each at most 10 s and 1 GB.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NTREX = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ntrex128" / "text"

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers import many_languages  # noqa: E402  (the tests' corpus of n languages)

LINES = 1000


def timed(*args: str) -> tuple[float, float]:
    """Seconds and peak memory (GB) of `analyzer ARGS` in a fresh process."""
    command = [sys.executable, "-c", "import resource, sys, time, runpy; start = time.perf_counter(); "
               "sys.argv = ['analyzer', *sys.argv[1:]]\n"
               "try:\n    runpy.run_module('analyzer', run_name='__main__')\n"
               "except SystemExit as done:\n    assert not done.code, done.code\n"
               "print(time.perf_counter() - start, "
               "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    seconds, kilobytes = done.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(kilobytes) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", type=int, action="append",
                        help="languages in the run (repeatable; default 12, 60 and 200)")
    args = parser.parse_args()
    if not NTREX.is_dir():
        sys.exit(f"{NTREX} is absent: this benchmark needs the NTREX-128 corpus from ../shared")
    print(f"{'languages':>9} {'run':>8} {'report':>16} {'page':>8} {'export':>16} {'JSON':>8} "
          f"{'--units csv':>16}")
    for n in args.languages or [12, 60, 200]:
        with tempfile.TemporaryDirectory() as tmp:
            folder, db = Path(tmp) / "corpus", Path(tmp) / "bench.db"
            many_languages(folder, n, NTREX, LINES)
            subprocess.run([sys.executable, "-m", "analyzer", "ingest", str(folder), "--db", str(db),
                            "--name", f"bench{n}"], check=True, capture_output=True)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "analyzer", "run", "--db", str(db), "--vocab",
                            "1024,4096", "--pretokenize", "none,words", "--parity", "--tokenizer",
                            "cl100k_base", "--tokenizer", "o200k_base", "--jobs", "2",
                            "--no-report"], check=True, capture_output=True)
            run_seconds = time.perf_counter() - start
            report = timed("report", "1", "--db", str(db), "--out", str(Path(tmp) / "reports"))
            page = (Path(tmp) / "reports" / "run-1.html").stat().st_size / 1e6
            export = timed("export", "1", "--db", str(db), "--out", str(Path(tmp) / "run.json"))
            size = (Path(tmp) / "run.json").stat().st_size / 1e6
            units = timed("export", "1", "--db", str(db), "--units", "--format", "csv",
                          "--out", str(Path(tmp) / "units.csv"))
        print(f"{n:>9} {run_seconds:>7.0f}s {report[0]:>6.1f} s {report[1]:>5.2f} GB "
              f"{page:>6.1f}MB {export[0]:>6.1f} s {export[1]:>5.2f} GB {size:>6.0f}MB "
              f"{units[0]:>6.1f} s {units[1]:>5.2f} GB", flush=True)


if __name__ == "__main__":
    main()
