"""Training memory against its prediction, per kind of job (issues 54, 68): the figures of
`analyzer.runs.costs`.

A run that trains on a source predicts each training's growth from the chunk-count tables
before it trains (`runs.memory.check_memory`). This measures it: whole runs (`execute_run`,
o200k's or another split, `--vocab`, one job at a time), each in a fresh process after the
counting pass is cached, in which every job is built in a process forked for it as the local
pool forks one (a local training, an extension, likewise), watched from outside: its growth in
resident memory (VmHWM less VmRSS at its start) and in address space (the largest VmSize seen,
polled every 5 ms, less VmSize at its start). For each job it prints the distinct chunks and
bytes of each stage, the growth measured and predicted; then it fits `fixed + per_byte * bytes
+ per_chunk * chunks + per_entry * entries` to each engine's measurements, the tightest model
at or above all of them (`covering`): the figures `costs` holds (resident, and address space
less each thread's stack and arena). The measurements behind `costs` are kept in
benchmarks/memory_measurements.json (`--fit benchmarks/memory_measurements.json` prints them).

    python benchmarks/textgen.py /tmp/thai --bytes 60M --languages tha_Thai,zho_Hans --equal
    python benchmarks/bench_memory.py /tmp/words --budgets 8M,20M,all --vocab 4096 \\
        --kinds bpe,parity,superbpe,extension,unigram,wordpiece --json /tmp/words.json
    python benchmarks/bench_memory.py --fit /tmp/words.json /tmp/thai.json

    python benchmarks/bench_memory.py /tmp/text1g --budgets all --kinds bpe --floors 1,2,5
                                        # issue 54's figures: what a count floor changes

Target: every prediction at or above the measured growth, and within 25% of it where the
tables, not the fixed part, make the most of it.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_sources  # noqa: E402  (the benchmarks' own helpers)
from bench_sources import in_fresh_process, register  # noqa: E402

KINDS = {
    "bpe": {},
    "parity": {"parity": True},
    "superbpe": {"superbpe": "half"},
    "extension": {"extend": ["o200k_base"], "added": [1024], "sizes": []},
    "unigram": {"algorithms": ["unigram"]},
    "wordpiece": {"algorithms": ["wordpiece"]},
}
"""Each kind's settings beside a shared BPE vocabulary (SuperBPE's transition: half the size;
an extension alone measures no BPE)."""


def settings_of(kind: str, budget: str, floor: int, vocab: int, languages: list[str],
                split: str):
    from analyzer.cli.parsing import parse_bytes
    from analyzer.runs import RunSettings

    extra = dict(KINDS[kind])
    if extra.get("superbpe") == "half":
        extra["superbpe"] = [vocab // 2]
    return RunSettings(**{"sizes": [vocab], "pretokenizers": [split], "train_on": "bench",
                          "per_language": False, "languages": languages, "jobs": 1,
                          "train_bytes": None if budget == "all"
                          else parse_bytes(budget, "--budgets"),
                          "min_chunk_count": floor, **extra})


def _status(pid: int) -> dict[str, int]:
    found = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                name, _, value = line.partition(":")
                if name in ("VmSize", "VmRSS", "VmHWM", "VmPeak", "Threads"):
                    number = int(value.split()[0])
                    found[name] = number if name == "Threads" else number * 1024
    except (OSError, ValueError):
        pass
    return found


def _in_child(work, sender) -> None:
    """A job's process: its peak resident memory counted from its start, the work done, the
    result and its own figures sent back."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # VmHWM from here
    start = _status(os.getpid())
    try:
        result = work()
    except BaseException as error:  # noqa: BLE001 - said in the parent
        sender.send(("error", repr(error), None))
        return
    sender.send(("done", result, {"start": start, "end": _status(os.getpid())}))


def _private(pid: int) -> int:
    """A process's pages of its own (smaps_rollup's Private_Clean and Private_Dirty): after a
    fork, what it has written (copied from its parent) or made; what a cgroup charges it."""
    total = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith(("Private_Clean", "Private_Dirty")):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return total


def measured(work, label: str, found: list[dict]):
    """`work()` in a process forked for it, watched from here (its address space every 5 ms,
    its own pages every 50 ms); its result."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_in_child, args=(work, sender))
    start = time.perf_counter()
    gc.freeze()  # as the local pool forks its jobs (`runs.pool`)
    process.start()
    gc.unfreeze()
    largest = private = 0
    polls = 0
    while not receiver.poll(0.005):
        largest = max(largest, _status(process.pid).get("VmSize", 0))
        polls += 1
        if polls % 10 == 0:
            private = max(private, _private(process.pid))
        if not process.is_alive() and not receiver.poll(0.1):
            raise RuntimeError(f"{label}: its process ended without a word")
    kind, result, figures = receiver.recv()
    process.join()
    if kind == "error":
        raise RuntimeError(f"{label}: {result}")
    begin, end = figures["start"], figures["end"]
    found.append({"label": label, "seconds": time.perf_counter() - start,
                  "resident": end["VmHWM"] - begin["VmRSS"], "private": private,
                  "address": max(largest, end["VmSize"], begin["VmSize"]) - begin["VmSize"],
                  "threads": end.get("Threads", 1)})
    return result


def phase_run(db: str, kind: str, budget: str, floor: str, vocab: str, split: str) -> dict:
    """One whole run in this process (its counts cached before), each job built in a process
    forked for it and measured; the predictions the run made."""
    import analyzer.runs.execute as execute
    from analyzer.runs import execute_run
    from analyzer.runs.builders import build_vocabulary
    from analyzer.store import get_source, open_db

    jobs: list[dict] = []
    predicted: list = []
    check, local_records = execute.check_memory, execute.local_records

    def checked(*args, **kwargs):
        found = check(*args, **kwargs)
        predicted.extend(found)
        return found

    def run_jobs(found, workers, report=None):
        return [measured(lambda job=job: build_vocabulary(job), job.label, jobs) for job in found]

    def local(run, texts, report=None, source=None, spread=None):
        if not run.made["extend"]:
            return local_records(run, texts, report, source, spread)
        return measured(lambda: local_records(run, texts, report, source, spread),
                        f"extend:{run.made['extend'][0].name}", jobs)

    execute.check_memory, execute.run_jobs, execute.local_records = checked, run_jobs, local
    database = open_db(Path(db))
    languages = get_source(database, "bench").languages
    start = time.perf_counter()
    run_id = execute_run(database, settings_of(kind, budget, int(floor), int(vocab), languages,
                                               split))
    by_label = {job.label: job for job in predicted}
    for job in jobs:
        prediction = by_label[job["label"]]
        job.update(predicted_resident=prediction.resident, predicted_address=prediction.address,
                   stages=[{"cost": name, "chunks": stats.kept_chunks, "bytes": stats.kept_bytes,
                            "entries": entries} for name, stats, entries in prediction.stages])
    from analyzer.bpe.threads import available_cores

    return {"run": run_id, "kind": kind, "budget": budget, "floor": int(floor),
            "vocab": int(vocab), "cores": available_cores(),
            "seconds": time.perf_counter() - start, "jobs": jobs}


def phase_train(folder: str, budget: str, vocab: str, split: str) -> dict:
    """`analyzer train`'s training (`bpe.train_detailed` on the distinct chunks of the texts it
    holds) on the folder's lines, up to the budget, in a process forked for it."""
    from analyzer import bpe
    from analyzer.cli.parsing import parse_bytes
    from analyzer.runs import costs

    limit = None if budget == "all" else parse_bytes(budget, "--budgets")
    texts: list[str] = []
    taken = 0
    for path in sorted(Path(folder).glob("*.txt")):
        for line in path.read_text().splitlines():
            if limit is not None and taken >= limit:
                break
            texts.append(line)
            taken += len(line.encode())
    chunks, counts = bpe.distinct(texts, split)
    n_bytes = sum(len(chunk.encode("utf-8", "surrogateescape")) for chunk in chunks)
    jobs: list[dict] = []
    start = time.perf_counter()
    measured(lambda: len(bpe.train_detailed(chunks, int(vocab), weights=counts).merges),
             "analyzer train", jobs)
    cost, entries = costs.LISTED, int(vocab) - 256
    # It trains in the command's own process: what it copies of the chunks the parent made
    # here is the bench's fork, not the command's.
    jobs[0].update(private=0, predicted_resident=cost.resident(len(chunks), n_bytes, entries),
                   predicted_address=cost.address(len(chunks), n_bytes, entries),
                   stages=[{"cost": cost.name, "chunks": len(chunks), "bytes": n_bytes,
                            "entries": entries}])
    return {"run": None, "kind": "train", "budget": budget, "floor": 1, "vocab": int(vocab),
            "seconds": time.perf_counter() - start, "jobs": jobs}


def phase_count(db: str, budget: str, vocab: str, split: str, kinds: str) -> dict:
    """The counting pass of a budget for every kind's pre-tokenizers, cached (a run refused by
    its memory limit of one byte, after counting)."""
    import contextlib

    from analyzer.runs import execute_run
    from analyzer.runs.memory import MEMORY_ENV, TooLittleMemory
    from analyzer.store import get_source, open_db

    database = open_db(Path(db))
    languages = get_source(database, "bench").languages
    os.environ[MEMORY_ENV] = "1"
    for kind in kinds.split(","):
        with contextlib.suppress(TooLittleMemory):
            execute_run(database, settings_of(kind, budget, 1, int(vocab), languages, split))
    return {}


PHASES = {"run": phase_run, "count": phase_count, "train": phase_train}


def floors_compared(db: Path, runs: dict[int, int], split: str) -> None:
    """What a count floor changes, against the run without one: the merges (the same first
    ones, and the tokens in common) and each language's premium on the corpus."""
    from analyzer.runs.plan import pretokenizer_name
    from analyzer.store import load_merges, open_db

    database = open_db(db)
    # A merge by the bytes of the token it makes: ids differ once the orders do.
    merges = {floor: [m.token for m in load_merges(database, run, "shared",
                                                   pretokenizer_name(split))]
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


def covering(design: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The tightest model at or above every measurement: the coefficients (each 0 or more)
    that minimize the sum of the predictions' excess over the measurements, in bytes (where
    memory is scarce, at scale, a gigabyte refused needlessly is what matters, not a tenth
    more of a small job), while no prediction falls below its measurement. A linear
    programme: its optimum is at a vertex, where as many measurements as the model has nonzero
    coefficients are met exactly, so every such choice is tried (4 coefficients, a few dozen
    measurements: some tens of thousands of small solves)."""
    n, width = design.shape
    best, found = np.inf, None
    for mask in range(1, 2 ** width):
        columns = [k for k in range(width) if mask >> k & 1]
        if 1 not in columns:  # bytes are what every engine holds: a model that has them
            continue
        for rows in itertools.combinations(range(n), len(columns)):
            system = design[np.ix_(rows, columns)]
            if abs(np.linalg.det(system)) < 1e-9:
                continue
            solved = np.linalg.solve(system, target[list(rows)])
            if (solved < 0).any():
                continue
            candidate = np.zeros(width)
            candidate[columns] = solved
            predicted = design @ candidate
            if (predicted < target * (1 - 1e-9)).any():
                continue
            excess = float(np.sum(predicted - target))
            if excess < best:
                best, found = excess, candidate
    assert found is not None
    return found


def _entries(row: dict, job: dict, stage: dict) -> int:
    """The entries a stage learns (recorded; or, in older measurements, from the run's kind
    and size)."""
    if "entries" in stage:
        return stage["entries"]
    vocab = row.get("vocab", 4096)
    if row["kind"] == "superbpe" and job["label"].startswith("superbpe"):
        return vocab - vocab // 2
    if row["kind"] == "extension":
        return KINDS["extension"]["added"][0]
    return vocab - (512 if job["label"].startswith("wordpiece") else 256)


def fit(rows: list[dict]) -> None:
    """Each engine's figures, over the jobs whose largest stage is of that engine (SuperBPE's
    second stage, where it is larger than its first), and each job's prediction against its
    measurement."""
    from analyzer.runs import costs

    engines = {cost.name: cost for cost in vars(costs).values()
               if isinstance(cost, costs.EngineCost)}
    points: dict[str, list] = {}
    for row in rows:
        for job in row["jobs"]:
            stage = job["stages"][-1]
            # Resident: what a cgroup charges the job's process, its pages of its own (those
            # it copied from its parent too), where polling saw more than its VmHWM's growth.
            points.setdefault(engines[stage["cost"]].name, []).append(
                (stage["bytes"], stage["chunks"], _entries(row, job, stage),
                 max(job["resident"], job.get("private", 0)), job["address"]))
    for name, found in points.items():
        if len(found) < 4:
            print(f"{name}: {len(found)} measurements, too few to fit")
            continue
        design = np.array([[1.0, n_bytes, chunks, entries]
                           for n_bytes, chunks, entries, _, _ in found])
        varied = len({entries for _, _, entries, _, _ in found}) > 1
        for column, what in ((3, "resident"), (4, "address")):
            target = np.array([point[column] for point in found], dtype=float)
            fitted = covering(design if varied else design[:, :3], target)
            fitted = np.append(fitted, 0.0) if not varied else fitted
            excess = design @ fitted / target - 1
            print(f"{name}, {what}: fixed {fitted[0] / 1e6:.0f} MB, {fitted[1]:.2f} B per byte "
                  f"of distinct chunk text, {fitted[2]:.1f} B per distinct chunk, "
                  f"{fitted[3]:.0f} B per entry learnt"
                  + ("" if varied else " (one size measured)")
                  + f" (at or above all {len(found)} measurements: {np.min(excess):+.0%} to "
                  f"{np.max(excess):+.0%}, median {np.median(excess):+.0%})")
    print()
    print("Each job against `costs` as they are now (address space: on 2 cores):")
    print("| job | vocab | budget | chunks | their bytes | added, measured | predicted | "
          "address space added | predicted |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        for job in row["jobs"]:
            stage = max(job["stages"], key=lambda item: item["bytes"])
            resident = max(job["resident"], job.get("private", 0))
            predicted = [(engines[item["cost"]].resident(item["chunks"], item["bytes"],
                                                         _entries(row, job, item)),
                          engines[item["cost"]].address(item["chunks"], item["bytes"],
                                                        _entries(row, job, item), 2))
                         for item in job["stages"]]
            label = job["label"].replace(" (its own training)", "")
            print(f"| {label} | {row.get('vocab', 4096):,} | {row['budget']} | "
                  f"{stage['chunks']:,} | {stage['bytes'] / 1e6:,.1f} MB | "
                  f"{resident / 1e6:,.0f} MB | {max(p[0] for p in predicted) / 1e6:,.0f} MB | "
                  f"{job['address'] / 1e6:,.0f} MB | {max(p[1] for p in predicted) / 1e6:,.0f} MB |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, nargs="?")
    parser.add_argument("--budgets", default="8M,20M,all")
    parser.add_argument("--floors", default="1")
    parser.add_argument("--kinds", default=",".join([*KINDS, "train"]))
    parser.add_argument("--vocab", type=int, default=4096)
    parser.add_argument("--split", default="o200k")
    parser.add_argument("--ntrex", type=Path, default=bench_sources.NTREX,
                        help="NTREX-128's text folder (the corpus measured)")
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    parser.add_argument("--fit", type=Path, nargs="+", help="fit the figures to these files")
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](*map(str, [args.folder, *args.args, *rest]))))
        return
    if args.fit:
        fit([row for path in args.fit for row in json.loads(path.read_text())])
        return
    if args.folder is None or not args.folder.is_dir():
        parser.error("give a folder of text (python benchmarks/textgen.py makes one)")
    budgets, kinds = args.budgets.split(","), args.kinds.split(",")
    floors = [int(floor) for floor in args.floors.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as temporary:
        db = Path(temporary) / "bench.db"
        bench_sources.NTREX = args.ntrex
        register(args.folder, db)
        run_ids = {}
        for budget in budgets:
            runs = [kind for kind in kinds if kind != "train"]
            if runs:
                in_fresh_process("count", db, budget, args.vocab, args.split, ",".join(runs),
                                 script=Path(__file__))
            for kind in kinds:
                for floor in floors if budget == budgets[-1] and kind != "train" else floors[:1]:
                    row = in_fresh_process("run", db, kind, budget, floor, args.vocab,
                                           args.split, script=Path(__file__)) \
                        if kind != "train" else \
                        in_fresh_process("train", args.folder, budget, args.vocab, args.split,
                                         script=Path(__file__))
                    for job in row["jobs"]:
                        print(f"{kind:>9} budget {budget:>4} floor {floor}: {job['label']}: "
                              + "; ".join(f"{stage['cost']} {stage['chunks']:,} chunks, "
                                          f"{stage['bytes'] / 1e6:.1f} MB"
                                          for stage in job["stages"])
                              + f"; resident +{job['resident'] / 1e6:,.0f} MB (its own pages "
                              f"{job['private'] / 1e6:,.0f} MB; predicted "
                              f"{job['predicted_resident'] / 1e6:,.0f}), address "
                              f"+{job['address'] / 1e6:,.0f} MB (predicted "
                              f"{job['predicted_address'] / 1e6:,.0f}); {job['seconds']:.0f} s",
                              flush=True)
                    rows.append(row)
                    run_ids[(kind, budget, floor)] = row["run"]
        if len(floors) > 1 and "bpe" in kinds:
            floors_compared(db, {floor: run_ids[("bpe", budgets[-1], floor)]
                                 for floor in floors}, args.split)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    fit(rows)


if __name__ == "__main__":
    main()
