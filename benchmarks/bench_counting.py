"""Counting production tokenizers: the analyzer's engine against each tokenizer's own library
and against gigatoken, on the same lines of FLORES-200 devtest, side by side in one run; then
whole `analyzer run` processes against tiktoken alone.

    python benchmarks/bench_counting.py FLORES_DEVTEST_DIR              # every tokenizer here
    python benchmarks/bench_counting.py DIR --languages 59 --repeat 3 -t o200k_base -t llama3
    python benchmarks/bench_counting.py DIR --runs                      # and the whole runs

FLORES_DEVTEST_DIR holds `<lang>.devtest` files (one sentence a line), as FLORES-200's release
and AleksandarPetrov/tokenization-fairness have them. Each measurement is a process of its own,
pinned to 1 or 2 cores (`os.sched_setaffinity`), timed inside it around the counting alone
(the tokenizer loaded first); the sides alternate and the median of `--repeat` is printed.

- engine: `ProductionTokenizer.measure`, what a run asks: each line's tokens and the words its
  tokens split, on the analyzer's engine where it counts that tokenizer;
- library: its library's batch call (tiktoken `encode_ordinary_batch`, tokenizers
  `encode_batch`, sentencepiece `encode` of a list), as `analyzer tokenizers` would count
  without the engine;
- gigatoken: `Tokenizer.encode_batch_list` (PyPI `gigatoken`, in the bench extra), loaded from
  the same files where it can read them (a .tiktoken file by its name's scheme, a
  tokenizer.json, a SentencePiece model); its total is checked against the library's.

With `--runs`: `analyzer run -t o200k_base --no-report` on the languages against tiktoken alone
counting the same lines (whole processes, imports included), and `run -t all-available
--no-report` on every language given.
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

ANALYZER = [sys.executable, "-m", "analyzer"]
"""The command, from this interpreter (whatever PATH holds)."""

GIGATOKEN_SCHEMES = {"cl100k_base": "cl100k", "o200k_base": "o200k", "llama3": "cl100k"}
"""The rank files gigatoken knows the split of, by the catalog's name (Llama 3's is cl100k's
pattern; the totals are checked against the library's all the same)."""


def lines_of(folder: Path, languages: int | None) -> list[str]:
    files = sorted(folder.glob("*.devtest"))
    if not files:
        raise SystemExit(f"{folder}: no *.devtest files (FLORES-200 devtest, one sentence a line)")
    found: list[str] = []
    for file in files[:languages]:
        found += file.read_text(encoding="utf-8").splitlines()
    return found


def _gigatoken(name: str):
    """gigatoken's tokenizer from the catalog tokenizer's own files, or a reason it has none."""
    try:
        import gigatoken
    except ImportError:
        return None, "gigatoken is not installed (pip install -e '.[bench]')"
    from analyzer.external.catalog import Format, entry
    from analyzer.external.tokenizers import catalog_files

    item = entry(name)
    files = catalog_files(item, None, downloads=False)
    data = {name: found.data for name, found in files.items()}  # found as the library reads it
    if item.format is Format.TOKENIZER_JSON:
        return gigatoken.Tokenizer.from_json(next(iter(data.values())).decode()), None
    if item.format is Format.SENTENCEPIECE:
        return gigatoken.Tokenizer.from_sentencepiece(next(iter(data.values()))), None
    if item.format in (Format.TIKTOKEN, Format.TIKTOKEN_RANKS) and name in GIGATOKEN_SCHEMES:
        folder = Path(tempfile.mkdtemp())
        path = folder / f"{name}.tiktoken"
        path.write_bytes(next(iter(data.values())))
        return gigatoken.Tokenizer.from_tiktoken(str(path),
                                                 pretokenizer=GIGATOKEN_SCHEMES[name]), None
    return None, f"gigatoken has no reader for {name}'s files ({item.format})"


def one(side: str, name: str, folder: Path, languages: int | None) -> dict:
    """In a pinned process: one side's seconds over the lines, and its total tokens."""
    from analyzer.external import resolve_tokenizer

    lines = lines_of(folder, languages)
    tokenizer = resolve_tokenizer(name, downloads=False)
    if side == "engine":
        if tokenizer.counter is None:
            return {"skipped": f"counted by {tokenizer.counted_by} (the engine does not)"}
        tokenizer.measure(lines[:1])  # the engine's model built (or read kept) before the clock
        start, cpu = time.perf_counter(), time.process_time()
        counts, _ = tokenizer.measure(lines)
    elif side == "library":
        tokenizer.count(lines[:1])
        start, cpu = time.perf_counter(), time.process_time()
        counts = tokenizer.count(lines)
    else:
        giga, why = _gigatoken(name)
        if giga is None:
            return {"skipped": why}
        start, cpu = time.perf_counter(), time.process_time()
        counts = [len(ids) for ids in giga.encode_batch_list(lines)]
    return {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu,
            "tokens": sum(counts), "mb": sum(len(line.encode()) for line in lines) / 1e6}


def pinned(cores: int, *args: str) -> dict:
    """One measurement in a process of its own on `cores` cores."""
    code = (f"import os, sys, json; os.sched_setaffinity(0, set(range({cores})));"
            f"sys.path.insert(0, {str(Path(__file__).parent)!r}); import bench_counting as b;"
            "print(json.dumps(b.one(*sys.argv[1:3], b.Path(sys.argv[3]), "
            "int(sys.argv[4]) or None)))")
    env = {**os.environ, "ANALYZER_THREADS": str(cores)}
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env)
    if done.returncode:
        said = [line.strip() for line in done.stderr.strip().splitlines()[-3:]]
        return {"skipped": " / ".join(said) or "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def per_tokenizer(names: list[str], folder: Path, languages: int | None, repeat: int,
                  core_counts: list[int]) -> None:
    print("MB/s: the lines' bytes over the median wall time; per CPU s: over the CPU time of all\n"
          "the process's threads (what a busy machine disturbs least)\n")
    print(f"{'tokenizer':15}{'cores':>6}{'engine MB/s':>13}{'library MB/s':>14}"
          f"{'gigatoken MB/s':>16}{'x library':>11}{'x gigatoken':>13}"
          f"{'per CPU s: engine':>19}{'library':>9}{'gigatoken':>11}  tokens")
    for name in names:
        for cores in core_counts:
            found: dict[str, list[dict]] = {"engine": [], "library": [], "gigatoken": []}
            for _ in range(repeat):  # the sides alternate, so that a busy spell hits them all
                for side in found:
                    found[side].append(pinned(cores, side, name, str(folder),
                                              str(languages or 0)))
            rate, per_cpu, notes = {}, {}, []
            for side, runs in found.items():
                timed = [run for run in runs if "seconds" in run]
                if not timed:
                    notes.append(f"{side}: {runs[0].get('skipped')}")
                    continue
                rate[side] = timed[0]["mb"] / statistics.median(run["seconds"] for run in timed)
                per_cpu[side] = timed[0]["mb"] / statistics.median(run["cpu"] for run in timed)
            tokens = {side: runs[0].get("tokens") for side, runs in found.items()}
            same = "" if tokens["engine"] in (None, tokens["library"]) else \
                f" ENGINE {tokens['engine']:,} != LIBRARY {tokens['library']:,}"
            if tokens["gigatoken"] not in (None, tokens["library"]):
                same += f" (gigatoken {tokens['gigatoken']:,}: not the library's count)"

            print(f"{name:15}{cores:6}{_cell(rate, 'engine', 13)}{_cell(rate, 'library', 14)}"
                  f"{_cell(rate, 'gigatoken', 16)}{_ratio(rate, 'library', 11)}"
                  f"{_ratio(rate, 'gigatoken', 13)}{_cell(per_cpu, 'engine', 19)}"
                  f"{_cell(per_cpu, 'library', 9)}{_cell(per_cpu, 'gigatoken', 11)}  "
                  f"{tokens['library'] or 0:,}{same}")
            for note in notes:
                print(f"{'':21}{note}")


def _cell(rate: dict[str, float], side: str, width: int) -> str:
    return f"{rate[side]:{width}.1f}" if side in rate else f"{'-':>{width}}"


def _ratio(rate: dict[str, float], over: str, width: int) -> str:
    """The engine's rate over another side's."""
    return (f"{rate['engine'] / rate[over]:{width}.1f}" if "engine" in rate and over in rate
            else f"{'-':>{width}}")


def whole_runs(folder: Path, languages: int | None, repeat: int) -> None:
    """`analyzer run` processes against tiktoken alone, on a database made for them."""
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "flores"
        corpus.mkdir()
        for file in sorted(folder.glob("*.devtest"))[:languages]:
            (corpus / f"{file.stem}.txt").write_text(file.read_text(encoding="utf-8"),
                                                     encoding="utf-8")
        env = {**os.environ, "ANALYZER_DB": str(Path(tmp) / "bench.db")}
        subprocess.run([*ANALYZER, "ingest", str(corpus), "--name", "flores"], check=True,
                       env=env, capture_output=True)
        alone = ("import sys, tiktoken; from analyzer.external import resolve_tokenizer;"
                 "lines = [l for f in sorted(__import__('pathlib').Path(sys.argv[1]).glob('*.txt'))"
                 " for l in f.read_text(encoding='utf-8').splitlines()];"
                 "resolve_tokenizer('o200k_base', downloads=False).count(lines)")
        commands = {
            "tiktoken alone, o200k_base": [sys.executable, "-c", alone, str(corpus)],
            "analyzer run -t o200k_base --no-report": [
                *ANALYZER, "run", "--corpus", "flores", "-t", "o200k_base", "--no-report"],
            "analyzer run -t all-available --no-report": [
                *ANALYZER, "run", "--corpus", "flores", "-t", "all-available", "--no-report"],
        }
        times: dict[str, list[float]] = {label: [] for label in commands}
        for _ in range(repeat):
            for label, command in commands.items():
                start = time.perf_counter()
                subprocess.run(command, check=True, env=env, capture_output=True)
                times[label].append(time.perf_counter() - start)
        median = {label: statistics.median(found) for label, found in times.items()}
        base = median["tiktoken alone, o200k_base"]
        n = len(list(corpus.glob("*.txt")))
        print(f"\nwhole processes on {n} languages, medians of {repeat} (wall seconds):")
        for label, seconds in median.items():
            print(f"  {label:45}{seconds:8.1f} s  {seconds / base:5.2f}x tiktoken alone")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="FLORES-200 devtest: <lang>.devtest files")
    parser.add_argument("--languages", type=int, default=None,
                        help="the first N languages (default: all)")
    parser.add_argument("-t", "--tokenizer", action="append", default=[],
                        help="a catalog tokenizer (default: every one available here)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cores", default="1,2", help="core counts, e.g. 1,2")
    parser.add_argument("--runs", action="store_true", help="the whole runs too")
    options = parser.parse_args()
    from analyzer.external import available_tokenizers

    names = options.tokenizer or available_tokenizers()[0]
    lines = lines_of(options.folder, options.languages)
    print(f"{len(lines):,} lines, {sum(len(line.encode()) for line in lines) / 1e6:.1f} MB; "
          f"medians of {options.repeat}, each side in a process of its own\n")
    per_tokenizer(names, options.folder, options.languages, options.repeat,
                  [int(n) for n in options.cores.split(",")])
    if options.runs:
        whole_runs(options.folder, options.languages, options.repeat)


if __name__ == "__main__":
    main()
