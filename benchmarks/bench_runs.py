"""Run benchmark: whole runs on the real corpora, as `analyzer run` does them.

    python benchmarks/bench_runs.py            # UDHR full run, then the NTREX shared sweep
    python benchmarks/bench_runs.py --udhr     # UDHR only
    python benchmarks/bench_runs.py --ntrex-cross 512,1024,2048,4096   # the database's growth
    python benchmarks/bench_runs.py --cl100k-study     # our cl100k-split vocabulary vs cl100k_base

Targets (issue 4): UDHR (57 languages x 32 units), sizes 256..4096, shared + per-language +
cross, under 60 s; NTREX (58 x 1501, 20 MB), shared only, sizes 512..32768, under 3 minutes.
Prints wall time, peak memory (this process and the largest worker) and the database's size.

    python benchmarks/bench_runs.py --executors   # the local pool against a Dask cluster

Target (issue 16): the NTREX per-language run (58 languages, shared + 58 own vocabularies,
sizes 512..8192) on a two-worker loopback Dask cluster within 15 % of the local pool of two
processes; and, from the measured per-job times, what a 200-language x 4-pre-tokenizer x 8-size
study would take on 1, 8 and 64 two-core workers.

    python benchmarks/bench_runs.py --algorithms-study   # BPE, Unigram and WordPiece on NTREX

Target (issue 55): `analyzer run --algorithm bpe,unigram,wordpiece --pretokenize words,cl100k
--parity --vocab 4096,32768` on NTREX (356 vocabularies, each language's own included) under
5 minutes on two cores. Prints its wall time and peak, and where the time goes: per algorithm,
the jobs, their training and their counting (each job's wall time from the progress it
reports, two jobs at a time), beside the stored training seconds.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

from analyzer.corpus import read_corpus
from analyzer.runs import RunSettings, execute_run
from analyzer.store import VocabKind, open_db, save_corpus, vocabularies

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"


def peak_mb() -> tuple[float, float]:
    """(this process's peak RSS, the largest finished worker's peak RSS) in MB."""
    status = Path("/proc/self/status").read_text().splitlines()
    own = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return own / 1024, children / 1024


def bench(name: str, folder: Path, settings: RunSettings) -> None:
    if not folder.is_dir():
        sys.exit(f"{folder} is absent: this benchmark needs ../shared/corpora")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        db = open_db(path)
        save_corpus(db, read_corpus(folder), name)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        before = path.stat().st_size
        start = time.perf_counter()
        execute_run(db, settings)
        seconds = time.perf_counter() - start
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = path.stat().st_size
    own, worker = peak_mb()
    print(f"{name}: {seconds:.1f} s wall; peak RSS {own:.0f} MB here, {worker:.0f} MB largest "
          f"worker; database {size / 1e6:.1f} MB ({(size - before) / 1e6:.1f} MB for the run)")


def executors() -> None:
    import logging

    from distributed import LocalCluster

    folder = CORPORA / "ntrex128" / "text"
    if not folder.is_dir():
        sys.exit(f"{folder} is absent: this benchmark needs ../shared/corpora")
    sizes = [512, 1024, 2048, 4096, 8192]
    start = time.perf_counter()
    # A cluster that is already up, as a real one is: its start-up is not the run's.
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None, silence_logs=logging.ERROR)
    startup = time.perf_counter() - start
    try:
        with tempfile.TemporaryDirectory() as tmp:
            db = open_db(Path(tmp) / "bench.db")
            save_corpus(db, read_corpus(folder), "ntrex128")
            timings: dict[str, list[float]] = {}
            runs = {}
            for executor in ("local", "dask", "local", "dask"):  # interleaved: a slow spell hits both
                settings = RunSettings(sizes=sizes, jobs=2, executor=executor,
                                       scheduler=cluster.scheduler_address if executor == "dask" else None)
                start = time.perf_counter()
                runs[executor] = execute_run(db, settings)
                timings.setdefault(executor, []).append(time.perf_counter() - start)
            found = vocabularies(db, runs["local"])
    finally:
        cluster.close()
    pool, dask = min(timings["local"]), min(timings["dask"])
    print(f"NTREX, shared + 58 own vocabularies, 512..8192, two processes: local pool {pool:.1f} s, "
          f"two-worker loopback Dask cluster {dask:.1f} s: overhead {dask / pool - 1:+.1%} (target at "
          f"most +15 %; best of 2 each; starting that cluster took {startup:.1f} s more, once)")
    own = [v.seconds or 0.0 for v in found if v.kind == VocabKind.LANGUAGE]
    shared = next(v.seconds or 0.0 for v in found if v.kind == VocabKind.SHARED)
    # Whole-job cost (training, counting, moving the result) from the pool's wall time: two
    # processes busy for `pool` seconds, the shared job's training counted apart.
    per_job = max(0.0, 2 * pool - shared) / len(own)
    print(f"measured: training an own vocabulary (one language, 1501 units, to 8192) "
          f"{sum(own) / len(own):.2f} s, a whole own job about {per_job:.2f} s; training the shared "
          f"one (58 languages, 20 MB) {shared:.1f} s")
    # A study of 200 languages x 4 pre-tokenizers x 8 sizes: sizes are prefixes, so one training
    # per vocabulary (at the largest size): 200 x 4 own vocabularies and 4 shared ones, each
    # shared one on 200/58 times NTREX's text (training time grows about linearly with it).
    shared_each = shared * 200 / 58
    for workers in (1, 8, 64):
        cores = 2 * workers
        seconds = max((200 * 4 * per_job + 4 * shared_each) / cores, shared_each)
        print(f"  200 x 4 x 8 study on {workers:>2} two-core workers: max((800 x {per_job:.2f} s + "
              f"4 x {shared_each:.0f} s) / {cores} cores, {shared_each:.0f} s) = {seconds / 60:.1f} min")


def cl100k_study() -> None:
    """How close does a vocabulary trained on NTREX with cl100k's pre-tokenizer come to the
    cl100k_base tokenizer's own premiums on the same units? (A finding, not a target.)"""
    import os

    from analyzer.metrics import language_metrics, load_run_data

    os.environ.setdefault("ANALYZER_OFFLINE", "1")
    folder = CORPORA / "ntrex128" / "text"
    with tempfile.TemporaryDirectory() as tmp:
        db = open_db(Path(tmp) / "study.db")
        save_corpus(db, read_corpus(folder), "ntrex128")
        start = time.perf_counter()
        run_id = execute_run(db, RunSettings(sizes=[32768], per_language=False,
                                             pretokenizers=["cl100k", "none"],
                                             tokenizers=["cl100k_base"]))
        seconds = time.perf_counter() - start
        frame = language_metrics(load_run_data(db, run_id), resamples=200)
    ours = frame[(frame["vocab"] == "shared") & (frame["pretokenizer"] == "cl100k")].set_index("lang")
    plain = frame[(frame["vocab"] == "shared") & (frame["pretokenizer"] == "none")].set_index("lang")
    theirs = frame[frame["vocab"] == "cl100k_base"].set_index("lang")
    print(f"NTREX-128, 58 languages, shared vocabulary of 32768 ({seconds:.0f} s for the run)")
    print(f"{'language':<10} {'ours, cl100k split':>19} {'ours, no split':>15} {'cl100k_base':>12}")
    for lang in sorted(ours.index, key=lambda lang: -theirs.loc[lang, "premium"]):
        print(f"{lang:<10} {ours.loc[lang, 'premium']:>19.2f} {plain.loc[lang, 'premium']:>15.2f} "
              f"{theirs.loc[lang, 'premium']:>12.2f}")
    both = ours["premium"].to_frame("ours").join(theirs["premium"].to_frame("theirs"))
    both["nosplit"] = plain["premium"]
    print(f"Pearson r, ours (cl100k split) vs cl100k_base: {both['ours'].corr(both['theirs']):.3f}; "
          f"ours (no split) vs cl100k_base: {both['nosplit'].corr(both['theirs']):.3f}")
    print(f"median |ours - theirs| / theirs: "
          f"{((both['ours'] - both['theirs']).abs() / both['theirs']).median():.1%}; "
          f"Gini of premiums: ours {ours['gini'].iloc[0]:.3f}, "
          f"cl100k_base {theirs['gini'].iloc[0]:.3f}")


def algorithms_study() -> None:
    """The three-algorithm NTREX study, and where its time goes."""
    folder = CORPORA / "ntrex128" / "text"
    if not folder.is_dir():
        sys.exit(f"{folder} is absent: this benchmark needs ../shared/corpora")
    settings = RunSettings(algorithms=["bpe", "unigram", "wordpiece"],
                           pretokenizers=["words", "cl100k"], parity=True, sizes=[4096, 32768])
    # Each job's phases as it reports them: the first "train", the first "count", "done".
    seen: dict[str, dict[str, float]] = {}

    def report(label: str, phase: str, _done: int, _total: int) -> None:
        seen.setdefault(label, {}).setdefault(phase, time.perf_counter())

    with tempfile.TemporaryDirectory() as tmp:
        db = open_db(Path(tmp) / "study.db")
        save_corpus(db, read_corpus(folder), "ntrex128")
        start = time.perf_counter()
        run_id = execute_run(db, settings, report=report)
        seconds = time.perf_counter() - start
        found = vocabularies(db, run_id)
    own, worker = peak_mb()
    print(f"NTREX study, bpe+unigram+wordpiece x words,cl100k x parity x 4096,32768: "
          f"{seconds:.0f} s wall ({seconds / 60:.1f} min; target under 5 min), {len(found)} "
          f"vocabularies; peak RSS {own:.0f} MB here, {worker:.0f} MB largest worker")
    def algorithm_of(name: str) -> str:
        return next((algorithm for algorithm in ("unigram", "wordpiece", "parity")
                     if name.startswith(algorithm) or name.endswith(algorithm)), "bpe")

    groups: dict[str, list[float]] = {}
    for label, phases in seen.items():
        algorithm = algorithm_of(label)
        ends = [phases.get(key) for key in ("train", "count", "done")]
        if ends[0] is None or ends[2] is None:
            continue
        counted = ends[1] if ends[1] is not None else ends[2]
        totals = groups.setdefault(algorithm, [0, 0.0, 0.0])
        totals[0] += 1
        totals[1] += counted - ends[0]
        totals[2] += ends[2] - counted
    stored: dict[str, float] = {}
    for vocabulary in found:
        name = algorithm_of(str(vocabulary.kind))
        stored[name] = stored.get(name, 0.0) + (vocabulary.seconds or 0.0)
    print(f"{'jobs of':<10} {'jobs':>5} {'training, s':>12} {'counting, s':>12}   "
          "(job wall times, two at a time)")
    for algorithm, (jobs, train, count) in sorted(groups.items()):
        print(f"{algorithm:<10} {jobs:>5} {train:>12.1f} {count:>12.1f}")
    print("stored training seconds by kind: " + ", ".join(
        f"{name} {total:.1f}" for name, total in sorted(stored.items())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--udhr", action="store_true", help="only the UDHR run")
    parser.add_argument("--cl100k-study", action="store_true",
                        help="NTREX, a shared vocabulary of 32768 trained with cl100k's split "
                             "rule, beside the cl100k_base tokenizer on the same units")
    parser.add_argument("--ntrex-cross", metavar="SIZES",
                        help="only an NTREX run with every per-language vocabulary and --cross")
    parser.add_argument("--executors", action="store_true",
                        help="the NTREX per-language run on the local pool and on Dask")
    parser.add_argument("--algorithms-study", action="store_true",
                        help="the three-algorithm NTREX study (issue 55) and where its time goes")
    args = parser.parse_args()
    if args.algorithms_study:
        algorithms_study()
        return
    if args.executors:
        executors()
        return
    if args.cl100k_study:
        cl100k_study()
        return
    if args.ntrex_cross:
        sizes = [int(size) for size in args.ntrex_cross.split(",")]
        bench(f"ntrex128, {args.ntrex_cross}, shared + per-language + cross", CORPORA / "ntrex128" / "text",
              RunSettings(sizes=sizes, cross=True))
        return
    bench("udhr, 256..4096, shared + per-language + cross (target < 60 s)", CORPORA / "udhr" / "text",
          RunSettings(sizes=[256, 512, 1024, 2048, 4096], cross=True))
    if not args.udhr:
        bench("ntrex128, 512..32768, shared only (target < 180 s)", CORPORA / "ntrex128" / "text",
              RunSettings(sizes=[512, 1024, 2048, 4096, 8192, 16384, 32768], per_language=False))


if __name__ == "__main__":
    main()
