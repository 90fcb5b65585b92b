"""BPE engine benchmark: our engine vs Hugging Face `tokenizers` vs the literal reference.

Every ratio is measured side by side in this one run, on NTREX-128 lines (all languages
interleaved, each line one text). Needs the `bench` extra and ../shared/corpora/ntrex128.

    pip install -e '.[bench]'
    python benchmarks/bench_bpe.py            # everything (about 5 minutes here)
    python benchmarks/bench_bpe.py --quick    # 1 MB only, no reference, no sweep at 4 MB

Targets (issue 2): single training within 2.0x of HF; a size sweep at least 2x faster than
HF; at least 50x faster than the reference on 100 KB at 1024; peak RSS at most 600 MB when
training 4 MB to 32768; tie_break="first" on 150 KB to 4096 in under 30 s.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from analyzer import bpe
from analyzer.bpe import reference

NTREX = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ntrex128" / "text"
SWEEP = [512, 1024, 2048, 4096, 8192, 16384, 32768]


def interleaved_lines(megabytes: float) -> list[str]:
    """Line 1 of every language, then line 2 of every language, ... up to the byte budget."""
    columns = [path.read_text(encoding="utf-8").splitlines() for path in sorted(NTREX.glob("*.txt"))]
    budget, lines, total = int(megabytes * 1_000_000), [], 0
    for row in zip(*columns):
        for line in row:
            lines.append(line)
            total += len(line.encode("utf-8"))
            if total >= budget:
                return lines
    return lines


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def hf_tokenizer(vocab_size: int, lines: list[str]):
    """HF BPE trained byte-level with no splitting: the configuration closest to ours."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(lines, trainer)
    return tokenizer


def byte_level_chars() -> list[str]:
    """GPT-2's printable stand-in character for each byte, as HF's ByteLevel uses them."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[byte] = chr(byte)
        else:
            chars[byte] = chr(256 + extra)
            extra += 1
    return [chars[byte] for byte in range(256)]


def hf_agrees_with_our_ids(merges, lines: list[str]) -> bool:
    """HF's encoder, given our merges, must give our ids exactly (a cross-check)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocabulary = bpe.Vocabulary(merges)
    chars = byte_level_chars()
    spelled = ["".join(chars[b] for b in vocabulary.token_bytes(i)) for i in range(vocabulary.size)]
    model = models.BPE(vocab={text: i for i, text in enumerate(spelled)},
                       merges=[(spelled[a], spelled[b]) for (a, b), _ in merges])
    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    return all(enc.ids == vocabulary.encode(line)
               for enc, line in zip(tokenizer.encode_batch(lines), lines))


def peak_rss_mb(megabytes: float, vocab_size: int) -> float:
    """Peak RSS of a fresh process that loads the lines and trains (includes the text itself).

    Read from VmHWM: ru_maxrss would carry over this (larger) process's peak across fork.
    """
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r});"
        "from bench_bpe import interleaved_lines; from analyzer import bpe;"
        f"lines = interleaved_lines({megabytes!r}); bpe.train(lines, {vocab_size});"
        "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(output.stdout.strip()) / 1024


def report(rows: list[dict], name: str, ours: float, theirs: float, target: str) -> None:
    ratio = ours / theirs
    print(f"{name:<44} ours {ours:8.2f} s   other {theirs:8.2f} s   ratio {ratio:6.2f}   ({target})")
    rows.append({"case": name, "ours_s": round(ours, 3), "other_s": round(theirs, 3),
                 "ratio": round(ratio, 3), "target": target})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 MB only; skip the slow parts")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if not NTREX.is_dir():
        sys.exit(f"{NTREX} is absent: this benchmark needs the NTREX-128 corpus from ../shared")
    rows: list[dict] = []
    corpora = {1: interleaved_lines(1)} if args.quick else {1: interleaved_lines(1),
                                                            4: interleaved_lines(4)}

    print("== single training: ours / HF tokenizers (target: ratio <= 2.0)")
    for megabytes, lines in corpora.items():
        for size in (4096, 32768):
            ours, merges = timed(bpe.train, lines, size)
            theirs, _ = timed(hf_tokenizer, size, lines)
            report(rows, f"{megabytes} MB, train to {size}", ours, theirs, "<= 2.0")

    print("== sweep of 7 sizes, tokens of every line at each: ours / HF (target: ratio <= 0.5)")
    for megabytes, lines in corpora.items():
        if megabytes == 4 and args.quick:
            continue
        start = time.perf_counter()
        merges = bpe.train(lines, SWEEP[-1])
        counts = bpe.count_tokens(lines, merges, SWEEP)
        ours = time.perf_counter() - start
        start = time.perf_counter()
        hf_counts = {}
        for size in SWEEP:
            tokenizer = hf_tokenizer(size, lines)
            hf_counts[size] = [len(enc.ids) for enc in tokenizer.encode_batch(lines)]
        theirs = time.perf_counter() - start
        report(rows, f"{megabytes} MB, sweep {SWEEP[0]}..{SWEEP[-1]}", ours, theirs, "<= 0.5")
        totals = {size: sum(counts[size]) for size in SWEEP}
        hf_totals = {size: sum(hf_counts[size]) for size in SWEEP}
        print(f"   total tokens, ours: {totals}\n   total tokens, HF:   {hf_totals}")
        print(f"   HF encoder with our merges gives our ids on every line: "
              f"{hf_agrees_with_our_ids(merges[:4096 - 256], lines)}")

    if not args.quick:
        print("== against the literal reference, first 100 KB, size 1024 (target: ratio <= 0.02)")
        small = interleaved_lines(0.1)
        ours, merges = timed(bpe.train, small, 1024)
        theirs, expected = timed(reference.train_many, small, 1024)
        assert merges == expected, "engine and reference disagree"
        report(rows, "100 KB, train to 1024 vs reference", ours, theirs, "<= 0.02")

    print("== tie_break='first', 150 KB to 4096 (target: under 30 s)")
    seconds, _ = timed(bpe.train, interleaved_lines(0.15), 4096, tie_break="first")
    print(f"{'150 KB, first tie-break, train to 4096':<44} ours {seconds:8.2f} s")
    rows.append({"case": "150 KB first tie-break to 4096", "ours_s": round(seconds, 3)})

    megabytes = 1 if args.quick else 4
    rss = peak_rss_mb(megabytes, 32768)
    print(f"== peak RSS training {megabytes} MB to 32768: {rss:.0f} MB (target: <= 600 MB)")
    rows.append({"case": f"peak RSS {megabytes} MB to 32768", "rss_mb": round(rss)})
    print(f"   (this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
