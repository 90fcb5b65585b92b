"""BPE, Unigram and WordPiece side by side, as a run trains them (issue 55): for a user choosing.

Each vocabulary is one job of a real run (`analyzer run --algorithm ... --vocab SIZE`, shared
vocabulary only), built in a fresh process of its own: its training time, the whole job's time
(training, then counting every NTREX unit with the model), its peak memory (the process's,
reset just before the job starts, so loading the corpus is not counted), and the tokens it
gives each NTREX language. Trained either on NTREX itself (58 languages, 20 MB) or on a
training source (`--source FOLDER`: registered, its sample counted once into the chunk-count
cache, then every job reads the cached tables as a run does).

    python benchmarks/bench_algorithms.py                          # NTREX, cl100k, 4096 and 32768
    python benchmarks/bench_algorithms.py --split words --repeat 3
    python benchmarks/bench_algorithms.py --source /work/data/text1g --size 32768 --repeat 1 \
        --work /tmp/bench1g          # the source counted once, kept for the next invocation
    python benchmarks/bench_algorithms.py --source /work/data/text1g --size 32768 --repeat 1 \
        --work /tmp/bench1g --peers  # and Hugging Face's trainers and SentencePiece beside

Times are medians of `--repeat` runs, the algorithms alternated (a slow spell hits all).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).parent))
from bench_sources import in_fresh_process, register  # noqa: E402  (the benchmarks folder is not a package)

if TYPE_CHECKING:
    from analyzer.runs.plan import SourceTables

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
ALGORITHMS = ("bpe", "unigram", "wordpiece")


def peak_rss_mb() -> float:
    status = Path("/proc/self/status").read_text().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024


def reset_peak() -> None:
    """Linux: the process's peak RSS starts again from what it holds now."""
    Path("/proc/self/clear_refs").write_text("5")


def prepare(db_path: Path, source: Path | None) -> None:
    """A database with NTREX as corpus `ntrex`, and the source registered as `bench`
    (`bench_sources.register`; its sample counted by a first small run, so that every job
    reads the cache)."""
    if source is None:
        from analyzer.corpus import read_corpus
        from analyzer.store import open_db, save_corpus

        save_corpus(open_db(db_path), read_corpus(CORPORA / "ntrex128" / "text"), "ntrex")
        return
    from analyzer.runs import RunSettings, execute_run
    from analyzer.store import open_db

    register(source, db_path)
    execute_run(open_db(db_path), RunSettings(sizes=[300], per_language=False,
                                              pretokenizers=["cl100k", "words"], train_on="bench"))


def job(db_path: str, algorithm: str, split: str, size: str, source: str) -> dict:
    """One vocabulary's job, in this (fresh) process."""
    from analyzer.runs import RunSettings
    from analyzer.runs.builders import make_plans
    from analyzer.runs.registry import builder_of
    from analyzer.runs.resolution import resolve
    from analyzer.store import load_texts, open_db

    db = open_db(Path(db_path))
    settings = RunSettings(corpus="ntrex", algorithms=[algorithm], pretokenizers=[split],
                           sizes=[int(size)], per_language=False,
                           train_on=source if source != "-" else None)
    resolved = resolve(db, settings)
    texts = load_texts(db, resolved.corpus.id, resolved.languages)
    tables = cached_tables(db, resolved) if resolved.source is not None else None
    wanted = "shared" if algorithm == "bpe" else algorithm
    (chosen,) = [plan for plan in make_plans(resolved, tables) if str(plan.kind) == wanted]
    work = chosen.job(texts)
    reset_peak()
    start = time.perf_counter()
    record = builder_of(work.kind).build(work)
    seconds = time.perf_counter() - start
    counts = record.counts[int(size)]
    return {"train": record.seconds, "job": seconds, "peak_mb": peak_rss_mb(),
            "tokens": {lang: sum(units) for lang, units in counts.items()}}


PEERS = ("hf-wordpiece", "hf-unigram", "sentencepiece")


def cached_tables(db, resolved) -> SourceTables:
    """The source's sample as `prepare` counted it, read from the chunk-count cache (as a rerun
    reads it: no text)."""
    from analyzer.runs.builders import run_splitters
    from analyzer.runs.chunk_cache import ChunkCache
    from analyzer.runs.counting import count_locally
    from analyzer.runs.plan import SourceTables

    plan = resolved.source
    paths, taken = count_locally(plan, run_splitters(resolved), ChunkCache.beside(db.path))
    return SourceTables({key: str(path) for key, path in paths.items()},
                        {lang: taken[lang]["bytes"] for lang in plan.languages},
                        list(plan.languages))


def source_counts(db_path: str, split: str) -> dict[str, int]:
    """The source's sample, every language's chunks merged (what a peer takes)."""
    from analyzer.runs import RunSettings
    from analyzer.runs.resolution import resolve
    from analyzer.store import open_db

    db = open_db(Path(db_path))
    resolved = resolve(db, RunSettings(corpus="ntrex", pretokenizers=[split], sizes=[512],
                                       per_language=False, train_on="bench"))
    return dict(cached_tables(db, resolved).chunk_table(split).items())


def peer(db_path: str, trainer: str, split: str, size: str, out: str) -> dict:
    """A peer's training on the source's chunks, in this (fresh) process: Hugging Face's
    WordPieceTrainer (its vocabulary checked against ours on the same chunks), Hugging Face's
    UnigramTrainer or SentencePiece's Unigram (`bench_unigram`'s settings), then the tokens
    its model gives NTREX."""
    import bench_unigram

    counts = source_counts(db_path, split)
    reset_peak()
    if trainer == "hf-wordpiece":
        from analyzer.external.library_trained import huggingface_wordpiece, spell
        from analyzer.wordpiece import train as train_wordpiece

        start = time.perf_counter()
        theirs = huggingface_wordpiece(counts, int(size))
        seconds = time.perf_counter() - start
        peak = peak_rss_mb()
        same = theirs == [spell(piece) for piece in train_wordpiece(counts, int(size))]
        return {"train": seconds, "peak_mb": peak, "same_as_ours": same}
    found = bench_unigram.train(trainer.removeprefix("hf-").replace("unigram", "huggingface"),
                                split, int(size), Path(out), counts)
    tokens = bench_unigram.count(trainer.removeprefix("hf-").replace("unigram", "huggingface"),
                                 split, Path(out))
    return {"train": found["seconds"], "peak_mb": peak_rss_mb(), "tokens": tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--split", action="append", help="pre-tokenizer (default: cl100k)")
    parser.add_argument("--size", action="append", type=int,
                        help="vocabulary size (default: 4096 and 32768)")
    parser.add_argument("--algorithm", action="append", choices=ALGORITHMS,
                        help="default: all three")
    parser.add_argument("--source", type=Path, help="train on this folder of text (a training "
                        "source) instead of NTREX itself")
    parser.add_argument("--peer", action="append", choices=PEERS, help="with --source: also "
                        "this peer on the same chunks (repeatable; default: none)")
    parser.add_argument("--peers", action="store_true", help="with --source: every peer")
    parser.add_argument("--timeout", type=float, default=1800,
                        help="seconds a peer may train (default 1800)")
    parser.add_argument("--work", type=Path, help="keep the database (and the source's "
                        "counts) in this folder, and use it again next time")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each (default 3)")
    args, rest = parser.parse_known_args()
    if args.phase == "job":
        print(json.dumps(job(*rest)))
        return
    if args.phase == "peer":
        print(json.dumps(peer(*rest)))
        return
    if not (CORPORA / "ntrex128" / "text").is_dir():
        sys.exit("this benchmark needs ../shared/corpora/ntrex128")
    splits, sizes = args.split or ["cl100k"], args.size or [4096, 32768]
    algorithms = args.algorithm or list(ALGORITHMS)
    with tempfile.TemporaryDirectory() as tmp:
        db_path = (args.work or Path(tmp)) / "bench.db"
        if not db_path.exists():
            db_path.parent.mkdir(parents=True, exist_ok=True)
            prepare(db_path, args.source)
        on = f"{args.source} (a training source)" if args.source else "NTREX itself"
        print(f"trained on {on}; tokens on NTREX (58 languages x 1501 units); medians of "
              f"{args.repeat}; each job in a fresh process")
        print(f"{'split':<7} {'size':>6} {'algorithm':<10} {'train s':>8} {'job s':>7} "
              f"{'peak MB':>8} {'tokens':>11} {'vs BPE':>7} {'median lang':>11} {'widest':>18}")
        for split in splits:
            for size in sizes:
                found: dict[str, list[dict]] = {name: [] for name in algorithms}
                for _ in range(args.repeat):
                    for name in algorithms:
                        found[name].append(in_fresh_process(
                            "job", db_path, name, split, size, "bench" if args.source else "-",
                            script=Path(__file__)))
                base = found.get("bpe", [None])[0]
                for name in algorithms:
                    runs = found[name]
                    tokens = runs[0]["tokens"]
                    total = sum(tokens.values())
                    row = (f"{split:<7} {size:>6} {name:<10} "
                           f"{statistics.median(r['train'] for r in runs):>8.2f} "
                           f"{statistics.median(r['job'] for r in runs):>7.2f} "
                           f"{statistics.median(r['peak_mb'] for r in runs):>8.0f} {total:>11,}")
                    if base is not None and name != "bpe":
                        ratios = {lang: tokens[lang] / base["tokens"][lang] - 1 for lang in tokens}
                        widest = max(ratios, key=lambda lang: abs(ratios[lang]))
                        row += (f" {total / sum(base['tokens'].values()) - 1:>+7.1%} "
                                f"{statistics.median(ratios.values()):>+11.1%} "
                                f"{widest:>9} {ratios[widest]:>+7.1%}")
                    print(row, flush=True)
                peers = PEERS if args.peers else args.peer or []
                if args.source:
                    for name in peers:
                        try:
                            theirs = in_fresh_process("peer", db_path, name, split, size,
                                                      Path(tmp) / f"{name}.model",
                                                      script=Path(__file__), timeout=args.timeout)
                        except subprocess.TimeoutExpired:
                            print(f"{split:<7} {size:>6} {name:<13} did not finish in "
                                  f"{args.timeout:.0f} s", flush=True)
                            continue
                        row = (f"{split:<7} {size:>6} {name:<13} {theirs['train']:>5.1f} "
                               f"{'':>7} {theirs['peak_mb']:>8.0f}")
                        if "same_as_ours" in theirs:
                            row += f"   vocabulary {'equal to' if theirs['same_as_ours'] else 'NOT'} ours"
                        elif base is not None:
                            total = sum(theirs["tokens"].values())
                            row += f" {total:>11,} {total / sum(base['tokens'].values()) - 1:>+7.1%}"
                        print(row, flush=True)


if __name__ == "__main__":
    main()
