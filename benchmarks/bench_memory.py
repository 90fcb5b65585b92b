"""Training memory against its prediction (issue 54): `analyzer.runs.memory.BPE_COST`.

A run that trains on a source predicts its trainings' peak from the chunk-count tables before
it trains (`runs.memory.check_memory`). This measures that peak: whole runs (`execute_run`, one
job: a shared vocabulary, o200k's split, to --vocab), each in a fresh process after the
counting pass is cached, at several budgets (`--train-bytes`) and count floors
(`--min-chunk-count`), and prints, for each, the distinct chunks and bytes trained on, the
measured peak (VmHWM), the prediction and its error. Then it fits `fixed + per_byte * bytes +
per_chunk * chunks` to the measurements (least squares), the figures `BPE_COST` holds.

    python benchmarks/textgen.py /tmp/text1g --bytes 1G
    python benchmarks/bench_memory.py /tmp/text1g --budgets 128M,256M,512M,all --floors 1,2,5
    python benchmarks/bench_memory.py /tmp/text10g --budgets all --floors 1

Target: every prediction within 15% of the measured peak.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_sources import in_fresh_process, peak_mb, register  # noqa: E402  (the benchmarks' own helpers)


def settings_of(budget: str, floor: int, vocab: int, languages: list[str]):
    from analyzer.cli.parsing import parse_bytes
    from analyzer.runs import RunSettings

    return RunSettings(sizes=[vocab], pretokenizers=["o200k"], train_on="bench",
                       per_language=False, languages=languages, jobs=1,
                       train_bytes=None if budget == "all" else parse_bytes(budget, "--budgets"),
                       min_chunk_count=floor)


def phase_run(db: str, budget: str, floor: str, vocab: str) -> dict:
    """One whole run in this process (its counts cached before): the stages it said, its
    prediction, and this process's peak."""
    from analyzer.runs import execute_run
    from analyzer.store import get_run, get_source, open_db

    database = open_db(Path(db))
    languages = get_source(database, "bench").languages
    said: list[str] = []
    start = time.perf_counter()
    run_id = execute_run(database, settings_of(budget, int(floor), int(vocab), languages),
                         stage=said.append)
    seconds = time.perf_counter() - start
    training = get_run(database, run_id).training
    tables = [item["chunks"]["o200k"] for item in training["languages"]]
    predicted = next(line for line in said if line.startswith("training needs about"))
    from analyzer.runs.memory import BPE_COST

    chunks = sum(t["kept_chunks"] for t in tables)
    n_bytes = sum(t["kept_bytes"] for t in tables)
    return {"run": run_id, "budget": budget, "floor": int(floor), "seconds": seconds, "peak_mb": peak_mb(),
            "chunks": chunks, "bytes": n_bytes, "all_chunks": sum(t["chunks"] for t in tables),
            "predicted_mb": max(BPE_COST.least, BPE_COST.peak(chunks, n_bytes)) / 1e6,
            "said": predicted}


def phase_count(db: str, budget: str, vocab: str) -> dict:
    """The counting pass of a budget, cached (a run at a floor nobody trains at: refused by
    its memory limit of one byte, after counting)."""
    import contextlib
    import os

    from analyzer.runs import execute_run
    from analyzer.runs.memory import MEMORY_ENV, TooLittleMemory
    from analyzer.store import get_source, open_db

    database = open_db(Path(db))
    os.environ[MEMORY_ENV] = "1"
    with contextlib.suppress(TooLittleMemory):
        execute_run(database, settings_of(budget, 1, int(vocab),
                                          get_source(database, "bench").languages))
    return {"peak_mb": peak_mb()}


PHASES = {"run": phase_run, "count": phase_count}


def floors_compared(db: Path, runs: dict[int, int]) -> None:
    """What a count floor changes, against the run without one: the merges (the same first
    ones, and the tokens in common) and each language's premium on the corpus."""
    from analyzer.runs.plan import pretokenizer_name
    from analyzer.store import load_merges, open_db

    database = open_db(db)
    # A merge by the bytes of the token it makes: ids differ once the orders do.
    merges = {floor: [m.token for m in load_merges(database, run, "shared",
                                                   pretokenizer_name("o200k"))]
              for floor, run in runs.items()}
    premiums = {}
    for floor, run in runs.items():
        shown = json.loads(subprocess.run(
            [sys.executable, "-m", "analyzer", "show", str(run), "--json", "--db", str(db)],
            capture_output=True, text=True, check=True).stdout)
        premiums[floor] = {record["lang"]: record["premium"] for record in shown["records"]
                           if record["vocab"] == "shared"}
    base = min(runs)
    for floor in sorted(runs)[1:]:
        same = next((k for k, (a, b) in enumerate(zip(merges[base], merges[floor])) if a != b),
                    min(len(merges[base]), len(merges[floor])))
        common = len(set(merges[base]) & set(merges[floor])) / max(1, len(merges[base]))
        change = {lang: premiums[floor][lang] / premiums[base][lang] - 1 for lang in premiums[base]}
        ordered = sorted(change, key=lambda lang: change[lang])
        print(f"floor {floor} against {base}: the first {same:,} merges the same, {common:.1%} of "
              f"them in common; premiums change by {np.median(list(change.values())):+.2%} in "
              f"median, from {change[ordered[0]]:+.1%} ({ordered[0]}) to "
              f"{change[ordered[-1]]:+.1%} ({ordered[-1]})", flush=True)
        for lang in ("eng_Latn", "hin_Deva", "tha_Thai", "zho_Hans", "amh_Ethi", "kor_Hang"):
            if lang in change:
                print(f"    {lang}: {premiums[base][lang]:.3f} -> {premiums[floor][lang]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, nargs="?")
    parser.add_argument("--budgets", default="128M,256M,512M,all")
    parser.add_argument("--floors", default="1,2,5")
    parser.add_argument("--vocab", type=int, default=131072)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](*map(str, [args.folder, *args.args, *rest]))))
        return
    if args.folder is None or not args.folder.is_dir():
        parser.error("give a folder of text (python benchmarks/textgen.py makes one)")
    budgets = args.budgets.split(",")
    floors = [int(floor) for floor in args.floors.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as temporary:
        db = Path(temporary) / "bench.db"
        register(args.folder, db)
        run_ids = {}
        for budget in budgets:
            in_fresh_process("count", db, budget, args.vocab, script=Path(__file__))
            for floor in floors if budget == budgets[-1] else floors[:1]:
                row = in_fresh_process("run", db, budget, floor, args.vocab,
                                       script=Path(__file__))
                error = row["predicted_mb"] / row["peak_mb"] - 1
                print(f"budget {budget:>5} floor {floor:>3}: {row['chunks']:>11,} of "
                      f"{row['all_chunks']:>11,} chunks, {row['bytes'] / 1e6:8.1f} MB of text; "
                      f"peak {row['peak_mb'] / 1e3:6.2f} GB, predicted "
                      f"{row['predicted_mb'] / 1e3:6.2f} GB ({error:+.1%}); run {row['seconds']:.0f} s",
                      flush=True)
                rows.append({**row, "error": error})
                run_ids[(budget, floor)] = row["run"]
        floors_compared(db, {floor: run_ids[(budgets[-1], floor)] for floor in floors})
    if len(rows) >= 3:
        design = np.array([[1.0, row["bytes"], row["chunks"]] for row in rows])
        fitted, *_ = np.linalg.lstsq(design, np.array([row["peak_mb"] * 1e6 for row in rows]),
                                     rcond=None)
        print(f"fitted: fixed {fitted[0] / 1e6:.0f} MB, {fitted[1]:.2f} B per byte of distinct "
              f"chunk text, {fitted[2]:.1f} B per distinct chunk")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
