"""The counting pass of a training source on a local Dask cluster (issue 54, item 5): a task per
file, each language's counts merged as a tree on the workers, its tables written by the client.

The text is a folder of `<lang>.txt` files (`textgen.py` makes one); a `--fraction` of each
language is cut, at line ends, into shards of at most `--shard-mb` (a `<lang>/` folder of
them), so that a large language is several tasks. Each measurement is a fresh process that
starts a LocalCluster (processes, one thread each, ANALYZER_THREADS=1 so that a worker counts
on one core) and runs `DaskExecutor.count` on a fresh cache:

- seconds (cluster start not included), MB/s, MB/s per worker;
- the client's peak memory (VmHWM) and each worker's (VmHWM, asked of every worker at the end);
- from Dask's task stream: the counting tasks' and the merges' compute seconds (summed over
  workers), the seconds spent moving counters between workers for the merges, and the tail
  after the last task (the client receiving each language's counters and writing its tables).

The worker counts alternate across rounds (1 2 4, 2 4 1, 4 1 2), the figures are medians, and
the load average is printed with each run: the machine may be shared. `--local` adds the local
counting (`count_locally`, one thread) over the same shards, the baseline of one worker.

    python benchmarks/textgen.py /tmp/text1g --bytes 1G
    python benchmarks/bench_cluster.py /tmp/text1g --fraction 0.25 --shard-mb 8
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_sources import NTREX, peak_mb, register, text_files  # noqa: E402


def shard(folder: Path, out: Path, fraction: float, shard_mb: float) -> tuple[int, int]:
    """Each `<lang>.txt` of the folder: its first `fraction` (at a line end) in shards of at
    most `shard_mb`, as `out/<lang>/NNN.txt`; (bytes written, files written)."""
    limit = int(shard_mb * 1e6)
    total = files = 0
    for path in text_files(folder):
        lang = path.name.split(".")[0]
        wanted = int(path.stat().st_size * fraction)
        (out / lang).mkdir(parents=True)
        taken, pieces, piece = 0, 0, None
        with open(path, "rb") as source:
            for line in source:
                if taken >= wanted:
                    break
                if piece is None or piece.tell() + len(line) > limit:
                    if piece is not None:
                        piece.close()
                    piece = open(out / lang / f"{pieces:03d}.txt", "wb")  # noqa: SIM115
                    pieces += 1
                piece.write(line)
                taken += len(line)
        if piece is not None:
            piece.close()
        total, files = total + taken, files + pieces
    return total, files


def _resolved(db: str):
    from analyzer.runs import RunSettings
    from analyzer.runs.resolution import resolve
    from analyzer.store import get_source, open_db

    database = open_db(Path(db))
    resolved = resolve(database, RunSettings(sizes=[131072], pretokenizers=["o200k"],
                                             train_on="bench", per_language=False,
                                             languages=get_source(database, "bench").languages))
    assert resolved.source is not None
    return resolved


def _worker_peak_mb() -> float:
    """On a worker: its process's VmHWM."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    return float("nan")


def phase_dask(db: str, cache: str, workers: str) -> dict:
    import distributed

    from analyzer.bpe import native_split
    from analyzer.runs.chunk_cache import ChunkCache
    from analyzer.runs.cluster import connect
    from analyzer.runs.execute import run_splitters

    native_split.unicode_tables()
    resolved = _resolved(db)
    assert resolved.source is not None
    started = time.perf_counter()
    with connect(None, workers=int(workers)) as executor:
        startup = time.perf_counter() - started
        client = executor.client
        client.run(native_split.unicode_tables)  # each worker's tables, before the clock
        before = peak_mb()
        begin = time.time()
        with distributed.get_task_stream(client=client) as stream:
            tables, taken = executor.count(resolved.source, run_splitters(resolved),
                                           ChunkCache(Path(cache)))
        end = time.time()
        worker_peaks = sorted(client.run(_worker_peak_mb).values())
        tasks = stream.data
    figures = {"workers": int(workers), "seconds": end - begin, "startup": startup,
               "bytes": sum(t["bytes"] for t in taken.values()), "peak_mb": peak_mb(),
               "before_mb": before, "worker_peak_mb": worker_peaks, "tables": len(tables),
               "cache_mb": sum(path.stat().st_size for path in tables.values()) / 1e6}
    figures.update(_stream(tasks, begin, end))
    return figures


def _stream(tasks: list[dict], begin: float, end: float) -> dict:
    """The task stream summed: compute seconds of the counts and of the merges, transfer
    seconds (counters moved between workers), when the last of each ended, and the tail."""
    kinds: dict[str, dict] = {"count": {}, "merge": {}}
    for task in tasks:
        kind = "count" if task["key"].startswith("count-") else (
            "merge" if "merge_counts" in task["key"] else None)
        if kind is None:
            continue
        sums = kinds[kind]
        sums["n"] = sums.get("n", 0) + 1
        for part in task["startstops"]:
            action = part["action"]
            sums[action] = sums.get(action, 0.0) + part["stop"] - part["start"]
            if action == "compute":
                sums["last"] = max(sums.get("last", 0.0), part["stop"] - begin)
    last = max(kinds["count"].get("last", 0.0), kinds["merge"].get("last", 0.0))
    return {"count_tasks": kinds["count"].get("n", 0),
            "count_compute": kinds["count"].get("compute", 0.0),
            "merge_tasks": kinds["merge"].get("n", 0),
            "merge_compute": kinds["merge"].get("compute", 0.0),
            "merge_transfer": kinds["merge"].get("transfer", 0.0),
            "last_count": kinds["count"].get("last", 0.0),
            "last_merge": kinds["merge"].get("last", 0.0),
            "tail": (end - begin) - last}


def phase_local(db: str, cache: str) -> dict:
    from analyzer.bpe import native_split
    from analyzer.runs.chunk_cache import ChunkCache
    from analyzer.runs.counting import count_locally
    from analyzer.runs.execute import run_splitters

    native_split.unicode_tables()
    resolved = _resolved(db)
    assert resolved.source is not None
    begin = time.perf_counter()
    tables, taken = count_locally(resolved.source, run_splitters(resolved),
                                  ChunkCache(Path(cache)), threads=1)
    return {"workers": 0, "seconds": time.perf_counter() - begin, "peak_mb": peak_mb(),
            "bytes": sum(t["bytes"] for t in taken.values())}


def phase_merge(db: str, cache: str, lang: str) -> dict:
    """One language's reduction, step by step in one process: each file counted (one thread),
    then merged two by two as the workers do, the right half pickled and unpickled as Dask
    moves it between workers (the network apart); then the client's part: the merged counters
    moved once more, made a table and written to the cache. Seconds and sizes of each step,
    the rates a projection scales by the largest table."""
    import pickle

    from analyzer.bpe import native_split
    from analyzer.bpe.counting import ChunkTable
    from analyzer.runs.chunk_cache import ChunkCache
    from analyzer.runs.cluster import _merge_counts
    from analyzer.runs.counting import count_file, save_table, table_key
    from analyzer.runs.execute import run_splitters

    native_split.unicode_tables()
    resolved = _resolved(db)
    plan = resolved.source
    assert plan is not None
    splitters = run_splitters(resolved)
    files = len(plan.languages[lang].files)
    begin = time.perf_counter()
    parts = [count_file(plan, lang, index, splitters, threads=1) for index in range(files)]
    counted = time.perf_counter() - begin
    levels: list[dict] = []
    while len(parts) > 1:
        level = {"merges": 0, "moved_mb": 0.0, "move_s": 0.0, "merge_s": 0.0}
        merged = []
        for k in range(0, len(parts), 2):
            if k + 1 == len(parts):
                merged.append(parts[k])
                continue
            start = time.perf_counter()
            data = pickle.dumps(parts[k + 1], protocol=5)
            right = pickle.loads(data)
            moved = time.perf_counter()
            merged.append(_merge_counts(parts[k], right))
            level["merges"] += 1
            level["moved_mb"] += len(data) / 1e6
            level["move_s"] += moved - start
            level["merge_s"] += time.perf_counter() - moved
        parts = merged
        levels.append(level)
    counters, found = parts[0]
    start = time.perf_counter()
    data = pickle.dumps(parts[0], protocol=5)
    counters, found = pickle.loads(data)
    fetched = time.perf_counter()
    written_mb = 0.0
    for name, splitter in splitters.items():
        table = ChunkTable.of(counters[name])
        path = save_table(ChunkCache(Path(cache)), table_key(plan, lang, name, splitter), table,
                          plan, lang, name, splitter, found.document(plan.languages[lang]))
        written_mb += path.stat().st_size / 1e6
        chunks = len(table)
    return {"lang": lang, "files": files, "bytes": found.bytes, "count_s": counted,
            "levels": levels, "table_mb": len(data) / 1e6, "fetch_s": fetched - start,
            "write_s": time.perf_counter() - fetched, "cache_mb": written_mb, "chunks": chunks,
            "peak_mb": peak_mb()}


PHASES = {"dask": phase_dask, "local": phase_local, "merge": phase_merge}


def in_fresh_process(phase: str, *args: object) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--phase", phase, *map(str, args)]
    env = {**os.environ, "ANALYZER_THREADS": "1"}  # a worker counts on one core
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{phase} failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def median(results: list[dict], key: str) -> float:
    return statistics.median(result[key] for result in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, nargs="?", help="the text: <lang>.txt files")
    parser.add_argument("--fraction", type=float, default=0.25,
                        help="the share of each language taken (0.25 of 1 GB: 256 MB)")
    parser.add_argument("--shard-mb", type=float, default=8.0, help="the largest shard")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--runs", type=int, default=3, help="rounds (the median)")
    parser.add_argument("--local", action="store_true", help="also count_locally, one thread")
    parser.add_argument("--merge", metavar="LANG",
                        help="also one language's reduction step by step (phase_merge)")
    parser.add_argument("--json", type=Path, help="also write every run's figures here")
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](*map(str, [args.folder, *args.args, *rest]))))
        return
    if args.folder is None or not args.folder.is_dir():
        parser.error("give a folder of text (python benchmarks/textgen.py makes one)")
    if not NTREX.is_dir():
        sys.exit(f"{NTREX} is absent: the source's languages are NTREX-128's")
    counts = [int(n) for n in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as temporary:
        work = Path(temporary)
        size, files = shard(args.folder, work / "shards", args.fraction, args.shard_mb)
        register(work / "shards", work / "bench.db")
        print(f"{size / 1e6:.0f} MB in {files} files (shards of <= {args.shard_mb:g} MB); "
              f"{os.cpu_count()} cores; o200k's split", flush=True)
        results: dict[int, list[dict]] = {n: [] for n in counts + [0] * args.local}
        for round in range(args.runs):
            order = counts[round % len(counts):] + counts[:round % len(counts)]
            for n in order + [0] * args.local:
                cache = work / f"cache-{round}-{n}"
                before = load()
                found = (in_fresh_process("dask", work / "bench.db", cache, n) if n
                         else in_fresh_process("local", work / "bench.db", cache))
                found["load"] = f"{before} -> {load()}"
                results[n].append(found)
                print(json.dumps(found), flush=True)
        print()
        for n, runs in results.items():
            if not runs:
                continue
            rate = median(runs, "bytes") / 1e6 / median(runs, "seconds")
            if n == 0:
                print(f"count_locally, 1 thread: {median(runs, 'seconds'):6.1f} s  "
                      f"{rate:5.1f} MB/s  peak {median(runs, 'peak_mb'):5.0f} MB")
                continue
            workers = statistics.median(max(r["worker_peak_mb"]) for r in runs)
            print(f"{n} worker{'s' * (n > 1)}: {median(runs, 'seconds'):6.1f} s  {rate:5.1f} MB/s  "
                  f"{rate / n:5.1f} MB/s per worker  client peak {median(runs, 'peak_mb'):5.0f} MB "
                  f"(before {median(runs, 'before_mb'):4.0f})  largest worker peak {workers:5.0f} MB"
                  f"  counts {median(runs, 'count_compute'):5.1f} s compute over "
                  f"{runs[0]['count_tasks']} tasks, merges {median(runs, 'merge_compute'):4.1f} s "
                  f"+ {median(runs, 'merge_transfer'):4.1f} s moving over {runs[0]['merge_tasks']}, "
                  f"last count at {median(runs, 'last_count'):5.1f} s, last merge at "
                  f"{median(runs, 'last_merge'):5.1f} s, tail {median(runs, 'tail'):4.1f} s  "
                  f"(start {median(runs, 'startup'):3.1f} s)")
        if args.merge:
            steps = in_fresh_process("merge", work / "bench.db", work / "cache-merge", args.merge)
            print(json.dumps(steps))
            merged = sum(level["moved_mb"] for level in steps["levels"])
            print(f"{args.merge}: {steps['bytes'] / 1e6:.0f} MB in {steps['files']} files counted "
                  f"in {steps['count_s']:.1f} s; {len(steps['levels'])} levels of merges: "
                  f"{sum(level['merge_s'] for level in steps['levels']):.2f} s merging, "
                  f"{sum(level['move_s'] for level in steps['levels']):.2f} s pickling "
                  f"{merged:.0f} MB; the table ({steps['chunks']:,} chunks, {steps['table_mb']:.0f} "
                  f"MB pickled) to the client {steps['fetch_s']:.2f} s, made a table and written "
                  f"{steps['write_s']:.2f} s ({steps['cache_mb']:.0f} MB)")
            results[-1] = [steps]  # under its own key: -1
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
