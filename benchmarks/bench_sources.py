"""Training on a monolingual source at scale (issue 39): the counting pass and the training,
beside Hugging Face `tokenizers` and rustbpe on the same files, in one run.

The text is made by `textgen.py` (a word model per language fitted on NTREX-128; its growth
curve is checked with `textgen.py --check`), or any folder of `<lang>.txt` files. Every
measurement runs in a fresh process, so its peak memory (VmHWM) is its own.

- count: `analyzer.runs.counting.count_locally` over every language with o200k's split, on 1
  core (`taskset`, ANALYZER_THREADS=1) and on 2: seconds, MB/s, MB/s per core, peak memory,
  distinct chunks. Target: at least 50 MB/s per core.
- flat: the same counting over one language's file and over ten shards that are that file ten
  times (links): ten times the text, the same distinct chunks. Target: the same peak memory.
- train: a shared vocabulary to `--vocab` (131,072) from the counted tables. Issue 54 (the lean
  engine: a weight per text, LEB128 position lists, a compact recount, the tables laid out a
  language at a time), 1 GB of textgen text, 14.0M distinct chunks, 282.5 MB of chunk bytes:
  peak 5,544 MB -> 3,112 MB, 92 s -> 90 s; its first quarter (4.51M chunks, 82.2 MB): 1,921 MB
  -> 1,250 MB, the same time. (`analyzer.runs.costs.TABLES` holds the engine's rates, fitted
  by bench_memory.py.)
- peers: HF `tokenizers` (`train_from_iterator`, BPE, o200k's regex then byte-level) and rustbpe
  (`train_from_iterator`, o200k's regex), each fed every line of every file. Targets at 1 GB:
  ours (count + train) at most 0.3x rustbpe's time, our peak memory at most half of HF's.

    python benchmarks/textgen.py /tmp/text1g --bytes 1G
    python benchmarks/bench_sources.py /tmp/text1g              # everything
    python benchmarks/bench_sources.py /tmp/text10g --no-peers --no-train --flat none
                                        # the counting pass at 10 GB (training from its 82M
                                        # distinct chunks: predicted by analyzer.runs.costs)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NTREX = HERE.parents[1] / "shared" / "corpora" / "ntrex128" / "text"


def peak_mb() -> float:
    """This process's peak resident memory (VmHWM), in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    return float("nan")


def text_files(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file())


# Each phase, in a process of its own: prints one JSON line.

def phase_count(db: str, cache: str) -> dict:
    from analyzer.bpe import native_split
    from analyzer.runs import RunSettings
    from analyzer.runs.chunk_cache import ChunkCache
    from analyzer.runs.counting import count_locally
    from analyzer.runs.execute import run_splitters
    from analyzer.runs.resolution import resolve
    from analyzer.store import get_source, open_db

    native_split.unicode_tables()  # read out of `regex` once, before the clock
    database = open_db(Path(db))
    resolved = resolve(database, RunSettings(sizes=[131072], pretokenizers=["o200k"],
                                             train_on="bench", per_language=False,
                                             languages=get_source(database, "bench").languages))
    assert resolved.source is not None
    start = time.perf_counter()
    tables, taken = count_locally(resolved.source, run_splitters(resolved), ChunkCache(Path(cache)))
    seconds = time.perf_counter() - start
    peak = peak_mb()  # the counting pass's, before the tables are read back below to count them
    from analyzer.runs.chunk_cache import load_table

    distinct = sum(len(load_table(path) or []) for path in tables.values())
    return {"seconds": seconds, "bytes": sum(t["bytes"] for t in taken.values()),
            "peak_mb": peak, "distinct": distinct,
            "cache_mb": sum(path.stat().st_size for path in tables.values()) / 1e6}


def phase_train(db: str, cache: str, vocab_size: str) -> dict:
    vocab = int(vocab_size)
    from analyzer.runs import RunSettings
    from analyzer.runs.chunk_cache import ChunkCache
    from analyzer.runs.counting import count_locally
    from analyzer.runs.execute import run_splitters
    from analyzer.runs.plan import SourceTables
    from analyzer.runs.resolution import resolve
    from analyzer.store import open_db

    database = open_db(Path(db))
    resolved = resolve(database, RunSettings(sizes=[vocab], pretokenizers=["o200k"],
                                             train_on="bench", per_language=False))
    assert resolved.source is not None
    tables, taken = count_locally(resolved.source, run_splitters(resolved), ChunkCache(Path(cache)))
    source = SourceTables({key: str(path) for key, path in tables.items()},
                          {lang: taken[lang]["bytes"] for lang in taken}, list(taken))
    before = peak_mb()
    start = time.perf_counter()
    training = source.train_bpe(vocab, pretokenizer="o200k")
    return {"seconds": time.perf_counter() - start, "peak_mb": peak_mb(), "before_mb": before,
            "merges": len(training.merges)}


def phase_hf(folder: str, vocab_size: str) -> dict:
    vocab = int(vocab_size)
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    from analyzer.bpe.pretokenize import PRETOKENIZERS

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZERS["o200k"]), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    start = time.perf_counter()
    tokenizer.train_from_iterator(lines(Path(folder)), trainer)
    return {"seconds": time.perf_counter() - start, "peak_mb": peak_mb(),
            "vocab": tokenizer.get_vocab_size()}


def phase_rustbpe(folder: str, vocab_size: str) -> dict:
    vocab = int(vocab_size)
    import rustbpe

    from analyzer.bpe.pretokenize import PRETOKENIZERS

    tokenizer = rustbpe.Tokenizer()
    start = time.perf_counter()
    tokenizer.train_from_iterator(lines(Path(folder)), vocab, pattern=PRETOKENIZERS["o200k"])
    return {"seconds": time.perf_counter() - start, "peak_mb": peak_mb()}


def lines(folder: Path):
    """Every line of every file, as the peers take text."""
    for path in text_files(folder):
        with open(path, encoding="utf-8") as file:
            for line in file:
                yield line.rstrip("\n")


PHASES = {"count": phase_count, "train": phase_train, "hf": phase_hf, "rustbpe": phase_rustbpe}


def in_fresh_process(phase: str, *args: object, cores: int | None = None,
                     script: Path = Path(__file__), timeout: float | None = None) -> dict:
    """A phase of `script` (this one, or another benchmark's) in a new process (on `cores`
    cores, where given; stopped after `timeout` seconds: subprocess.TimeoutExpired); its JSON
    line."""
    command = [sys.executable, str(script.resolve()), "--phase", phase, *map(str, args)]
    env = dict(os.environ)
    if cores is not None:
        command = ["taskset", "-c", ",".join(map(str, range(cores))), *command]
        env["ANALYZER_THREADS"] = str(cores)
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{phase} failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# The benchmark.

def register(folder: Path, db_path: Path) -> float:
    """A database with NTREX's languages that the folder has, and the folder as source
    'bench'; the seconds the source took to register (read and hashed once)."""
    from analyzer.corpus import read_corpus
    from analyzer.corpus.sources import find_source_files, scan_files
    from analyzer.store import open_db, save_corpus, save_source

    files = find_source_files([folder])
    corpus = db_path.with_suffix(".corpus")
    corpus.mkdir()
    languages = sorted({item.lang for item in files})
    if len(languages) == 1:  # a corpus has two languages or more: one more, not trained on
        languages.append("fra_Latn" if languages[0] != "fra_Latn" else "eng_Latn")
    for lang in languages:
        (corpus / f"{lang}.txt").symlink_to(NTREX / f"{lang}.txt")
    database = open_db(db_path)
    save_corpus(database, read_corpus(corpus), "ntrex")
    start = time.perf_counter()
    save_source(database, "bench", scan_files(files), documents="lines", text_field="text")
    return time.perf_counter() - start


def repeated(folder: Path, lang: str, times: int, work: Path) -> Path:
    """A folder where `lang` is `times` shards, each a hard link to its one file (the same
    bytes under names of their own)."""
    found = next(path for path in text_files(folder) if path.name.startswith(lang + "."))
    out = work / f"repeated{times}" / lang
    out.mkdir(parents=True)
    for k in range(times):
        os.link(found, out / f"{k:03d}{''.join(found.suffixes)}")  # a name of its own
    return out.parent


class Figures:
    def __init__(self) -> None:
        self.rows: list[dict] = []

    def say(self, case: str, text: str, **values) -> None:
        print(f"{case:<44} {text}", flush=True)
        self.rows.append({"case": case, **values})


def measure_count(db: Path, work: Path, cores: int, runs: int) -> dict:
    results = []
    for _ in range(runs):
        cache = work / f"cache-{cores}"
        shutil.rmtree(cache, ignore_errors=True)
        results.append(in_fresh_process("count", db, cache, cores=cores))
    best = dict(results[0])
    best["seconds"] = statistics.median(r["seconds"] for r in results)
    best["peak_mb"] = statistics.median(r["peak_mb"] for r in results)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, nargs="?", help="the text: <lang>.txt files")
    parser.add_argument("--vocab", type=int, default=131072)
    parser.add_argument("--runs", type=int, default=3, help="counting runs per core count (the median)")
    parser.add_argument("--no-peers", action="store_true", help="ours alone")
    parser.add_argument("--no-train", action="store_true", help="the counting pass alone")
    parser.add_argument("--flat", default="eng_Latn",
                        help="the language of the flatness check ('none': no check)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](*map(str, [args.folder, *args.args, *rest]))))
        return
    if args.folder is None or not args.folder.is_dir():
        parser.error("give a folder of text (python benchmarks/textgen.py makes one)")
    if not NTREX.is_dir():
        sys.exit(f"{NTREX} is absent: the runs measure on NTREX-128")
    figures = Figures()
    with tempfile.TemporaryDirectory(prefix="bench-sources-") as temporary:
        work = Path(temporary)
        db = work / "bench.db"
        seconds = register(args.folder, db)
        size = sum(path.stat().st_size for path in text_files(args.folder))
        figures.say("registering the source", f"{seconds:7.1f} s  {size / 1e6 / seconds:6.0f} MB/s "
                    "(each file read and hashed once)", seconds=round(seconds, 2))
        print(f"{size / 1e9:.2f} GB of text; o200k's split; vocabulary {args.vocab:,}", flush=True)
        counted = {}
        for cores in (1, 2):
            found = measure_count(db, work, cores, args.runs)
            counted[cores] = found
            rate = found["bytes"] / 1e6 / found["seconds"]
            figures.say(f"counting pass, {cores} core{'s' * (cores > 1)}",
                        f"{found['seconds']:7.1f} s  {rate:6.1f} MB/s  {rate / cores:5.1f} MB/s "
                        f"per core (>= 50)  peak {found['peak_mb']:6.0f} MB  "
                        f"{found['distinct']:,} distinct chunks, cache {found['cache_mb']:.0f} MB",
                        cores=cores, seconds=round(found["seconds"], 2), mb_per_s=round(rate, 1),
                        peak_mb=round(found["peak_mb"]), distinct=found["distinct"])
        for times in (1, 10) if args.flat != "none" else ():
            folder = repeated(args.folder, args.flat, times, work) if times > 1 else None
            if folder is None:
                base = work / "flat1"
                base.mkdir()
                found_file = next(p for p in text_files(args.folder)
                                  if p.name.startswith(args.flat + "."))
                (base / found_file.name).symlink_to(found_file)
                folder = base
            flat_db = work / f"flat{times}.db"
            register(folder, flat_db)
            found = in_fresh_process("count", flat_db, work / f"flat-cache-{times}", cores=2)
            figures.say(f"flat: {args.flat} x{times}",
                        f"{found['bytes'] / 1e6:8.0f} MB of text  peak {found['peak_mb']:6.0f} MB  "
                        f"{found['distinct']:,} distinct chunks",
                        times=times, peak_mb=round(found["peak_mb"]), text_mb=found["bytes"] / 1e6)
        if args.no_train:
            _write(args.json, figures)
            return
        cache = work / "cache-2"
        trained = in_fresh_process("train", db, cache, args.vocab)
        ours = counted[2]["seconds"] + trained["seconds"]
        ours_peak = max(counted[2]["peak_mb"], trained["peak_mb"])
        figures.say("ours: training from the tables",
                    f"{trained['seconds']:7.1f} s  peak {trained['peak_mb']:6.0f} MB  "
                    f"({trained['merges']:,} merges)", seconds=round(trained["seconds"], 2),
                    peak_mb=round(trained["peak_mb"]))
        figures.say("ours: counting + training (2 cores)",
                    f"{ours:7.1f} s  peak {ours_peak:6.0f} MB", seconds=round(ours, 2),
                    peak_mb=round(ours_peak))
        if args.no_peers:
            _write(args.json, figures)
            return
        for peer, phase in (("rustbpe", "rustbpe"), ("HF tokenizers", "hf")):
            found = in_fresh_process(phase, args.folder, args.vocab)
            target = "<= 0.3" if peer == "rustbpe" else ""
            memory_target = "<= 0.5" if peer == "HF tokenizers" else ""
            figures.say(f"{peer}", f"{found['seconds']:7.1f} s  peak {found['peak_mb']:6.0f} MB  "
                        f"time ratio {ours / found['seconds']:.2f} {target}  memory ratio "
                        f"{ours_peak / found['peak_mb']:.2f} {memory_target}",
                        peer=peer, seconds=round(found["seconds"], 2),
                        peak_mb=round(found["peak_mb"]),
                        time_ratio=round(ours / found["seconds"], 3),
                        memory_ratio=round(ours_peak / found["peak_mb"], 3))
    _write(args.json, figures)


def _write(path: Path | None, figures: Figures) -> None:
    if path:
        path.write_text(json.dumps(figures.rows, indent=2))


if __name__ == "__main__":
    main()
