"""BPE engine benchmark: our engines beside rustbpe, bpeasy and Hugging Face `tokenizers`.

Every ratio is measured side by side in this one run, on NTREX-128 lines (all languages
interleaved, each line one text, byte-level, no pre-tokenization: the peers get a pattern that
matches a whole line, `[^\\n]+`). Each training runs in a fresh process, so that its peak memory
(VmHWM) minus the memory before training is what training added. Needs the `bench` extra and
../shared/corpora/ntrex128.

    pip install -e '.[bench]'
    python benchmarks/bench_bpe.py            # everything (about 15 minutes here)
    python benchmarks/bench_bpe.py --quick    # 1 and 4 MB only

Targets (issue 11): 4 MB and 16 MB to 32768 in at most 0.5x rustbpe's time; training adds at
most 16 bytes per input byte at 16 MB; a 7-size sweep with every line counted at every size at
least 3x faster than rustbpe training once per size plus its encoder; count_tokens with 32768
merges at least 20 MB/s on one core. And from issue 2: the engine exactly equals the reference
(checked here on 100 KB) and is far faster.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

NTREX = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ntrex128" / "text"
SWEEP = [512, 1024, 2048, 4096, 8192, 16384, 32768]
PEERS_PATTERN = r"[^\n]+"


def interleaved_lines(megabytes: float) -> list[str]:
    """Line 1 of every language, then line 2 of every language, ... up to the byte budget; past
    the corpus's 20 MB it starts again from the first line (the growth table says so)."""
    columns = [path.read_text(encoding="utf-8").splitlines() for path in sorted(NTREX.glob("*.txt"))]
    budget, lines, total = int(megabytes * 1_000_000), [], 0
    while True:
        for row in zip(*columns):
            for line in row:
                lines.append(line)
                total += len(line.encode("utf-8"))
                if total >= budget:
                    return lines


def ntrex_lines(megabytes: float, what: str) -> dict[str, list[str]]:
    """`lines_by_language`, said in a line (`what`: the rest of it); exit when ../shared
    has no NTREX."""
    if not NTREX.is_dir():
        sys.exit(f"{NTREX} is absent: this benchmark needs ../shared/corpora/ntrex128")
    by_language = lines_by_language(megabytes)
    n_bytes = sum(len(line.encode()) for lines in by_language.values() for line in lines)
    print(f"NTREX-128: {len(by_language)} languages x {len(by_language['eng_Latn'])} lines, "
          f"{n_bytes / 1e6:.1f} MB; {what}")
    return by_language


def lines_by_language(megabytes: float) -> dict[str, list[str]]:
    """The first lines of every language (the same lines in each), up to the byte budget (at
    most the whole corpus)."""
    columns = {path.stem: path.read_text(encoding="utf-8").splitlines()
               for path in sorted(NTREX.glob("*.txt"))}
    budget, total, rows = int(megabytes * 1_000_000), 0, 0
    for row in zip(*columns.values()):
        total += sum(len(line.encode("utf-8")) for line in row)
        rows += 1
        if total >= budget:
            break
    return {lang: lines[:rows] for lang, lines in columns.items()}


TRAINERS = {
    "compiled": "from analyzer.bpe import ENGINES; "
                "result = ENGINES['compiled'].train_detailed(lines, SIZE); "
                "tokens = result.tokens_after(len(result.merges))",
    "python": "from analyzer.bpe import ENGINES; "
              "result = ENGINES['python'].train_detailed(lines, SIZE); "
              "tokens = result.tokens_after(len(result.merges))",
    "rustbpe": "import rustbpe; result = rustbpe.Tokenizer(); "
               f"result.train_from_iterator(iter(lines), SIZE, pattern={PEERS_PATTERN!r}); "
               "tokens = sum(map(len, result.batch_encode(lines)))",
    "bpeasy": "import bpeasy; result = bpeasy.train_bpe(iter(lines), "
              f"{PEERS_PATTERN!r}, 10**6, SIZE); tokens = None",
    "hf": "from bench_bpe import hf_tokenizer; result = hf_tokenizer(SIZE, lines); "
          "tokens = sum(len(e.ids) for e in result.encode_batch(lines))",
    # With GPT-2's split pattern (issue 12): ours trains on each distinct chunk once, weighted.
    "compiled-gpt2": "from analyzer import bpe; "
                     "result = bpe.train_detailed(lines, SIZE, pretokenizer='gpt2'); "
                     "tokens = result.tokens_after(len(result.merges))",
    "rustbpe-gpt2": "import rustbpe; from analyzer.bpe import PRETOKENIZERS; "
                    "result = rustbpe.Tokenizer(); "
                    "result.train_from_iterator(iter(lines), SIZE, pattern=PRETOKENIZERS['gpt2']); "
                    "tokens = sum(map(len, result.batch_encode(lines)))",
    "hf-gpt2": "from bench_bpe import hf_tokenizer; result = hf_tokenizer(SIZE, lines, split=True); "
               "tokens = None",
}
"""Code that trains on `lines` to SIZE (and, where cheap, counts the training tokens, to check
the peers agree with us)."""


def train_in_fresh_process(trainer: str, megabytes: float, size: int) -> dict:
    """Seconds, MB added by training (peak RSS minus RSS before it) and the token total."""
    code = f"""
import sys, time, json
sys.path.insert(0, {str(Path(__file__).parent)!r})
from bench_bpe import interleaved_lines
lines = interleaved_lines({megabytes!r})
n_bytes = sum(len(line.encode()) for line in lines)
def status(key):
    return int(next(l.split()[1] for l in open('/proc/self/status') if l.startswith(key)))
before = status('VmRSS')
start = time.perf_counter()
SIZE = {size}
{TRAINERS[trainer].replace('; ', chr(10))}
seconds = time.perf_counter() - start
added = (status('VmHWM') - before) / 1024
print(json.dumps({{"seconds": seconds, "added_mb": added, "bytes": n_bytes, "tokens": tokens}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{trainer} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def hf_tokenizer(vocab_size: int, lines: list[str], split: bool = False):
    """HF BPE trained byte-level with no splitting (the configuration closest to ours), or with
    its ByteLevel pre-tokenizer's own regex (GPT-2's split rule) when `split`."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=split)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(lines, trainer)
    return tokenizer


def byte_level_chars() -> list[str]:
    """GPT-2's printable stand-in character for each byte, as HF's ByteLevel uses them."""
    from analyzer.external.extension import byte_level_alphabet

    alphabet = byte_level_alphabet()
    return [alphabet[byte] for byte in range(256)]


def hf_agrees_with_our_ids(merges, lines: list[str]) -> bool:
    """HF's encoder, given our merges, must give our ids exactly (a cross-check)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    from analyzer import bpe

    vocabulary = bpe.Vocabulary(merges)
    chars = byte_level_chars()
    spelled = ["".join(chars[b] for b in vocabulary.token_bytes(i)) for i in range(vocabulary.size)]
    model = models.BPE(vocab={text: i for i, text in enumerate(spelled)},
                       merges=[(spelled[a], spelled[b]) for (a, b), _ in merges])
    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    return all(enc.ids == vocabulary.encode(line)
               for enc, line in zip(tokenizer.encode_batch(lines), lines))


class Table:
    """The figures, printed as they come and kept for --json."""

    def __init__(self):
        self.rows: list[dict] = []

    def ratio(self, case: str, ours: float, theirs: float, peer: str, target: str) -> None:
        ratio = ours / theirs
        print(f"{case:<46} ours {ours:7.2f} s   {peer} {theirs:7.2f} s   ratio {ratio:5.2f}   ({target})")
        self.rows.append({"case": case, "ours_s": round(ours, 3), "peer": peer,
                          "peer_s": round(theirs, 3), "ratio": round(ratio, 3), "target": target})

    def figure(self, case: str, text: str, **values) -> None:
        print(f"{case:<46} {text}")
        self.rows.append({"case": case, **values})


def median_of(runs: int, function, *args):
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = function(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 and 4 MB only")
    parser.add_argument("--runs", type=int, default=3, help="runs per timing (the median)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if not NTREX.is_dir():
        sys.exit(f"{NTREX} is absent: this benchmark needs the NTREX-128 corpus from ../shared")
    from analyzer import bpe
    from analyzer.bpe import reference

    if "compiled" not in bpe.ENGINES:
        sys.exit("the compiled engine is not built: pip install -e . with a C compiler")
    table = Table()

    print("== training to 32768, each in a fresh process, medians of", args.runs)
    sizes_mb = [4] if args.quick else [4, 16]
    for megabytes in sizes_mb:
        results: dict[str, list[dict]] = {"compiled": [], "rustbpe": []}
        for _ in range(args.runs):  # interleaved, so that a slow moment hits both
            for trainer in results:
                results[trainer].append(train_in_fresh_process(trainer, megabytes, 32768))
        ours = statistics.median(r["seconds"] for r in results["compiled"])
        rust = statistics.median(r["seconds"] for r in results["rustbpe"])
        table.ratio(f"{megabytes} MB to 32768 vs rustbpe", ours, rust, "rustbpe", "<= 0.5")
        n_bytes = results["compiled"][0]["bytes"]
        for trainer, runs in results.items():
            added = max(r["added_mb"] for r in runs)
            table.figure(f"  memory added, {trainer}", f"{added:7.0f} MB = {added * 2**20 / n_bytes:5.1f} "
                         "bytes per input byte" + (" (<= 16)" if trainer == "compiled" else ""),
                         trainer=trainer, megabytes=megabytes, added_mb=round(added),
                         bytes_per_byte=round(added * 2**20 / n_bytes, 1))
        same = results["compiled"][0]["tokens"] == results["rustbpe"][0]["tokens"]
        table.figure("  rustbpe's merges give our token total", str(same), same=same)
        for trainer in ("bpeasy", "hf"):
            other = train_in_fresh_process(trainer, megabytes, 32768)
            table.ratio(f"{megabytes} MB to 32768 vs {trainer}", ours, other["seconds"], trainer,
                        "faster than every peer")
            added = other["added_mb"]
            table.figure(f"  memory added, {trainer}", f"{added:7.0f} MB = {added * 2**20 / n_bytes:5.1f} "
                         "bytes per input byte", trainer=trainer, added_mb=round(added))

    print("== pre-tokenized with GPT-2's pattern, training to 32768 (issue 12)")
    megabytes = 4 if args.quick else 16
    runs = {name: [train_in_fresh_process(name, megabytes, 32768) for _ in range(args.runs)]
            for name in ("compiled-gpt2", "rustbpe-gpt2")}
    hf = train_in_fresh_process("hf-gpt2", megabytes, 32768)
    ours = statistics.median(r["seconds"] for r in runs["compiled-gpt2"])
    rust = statistics.median(r["seconds"] for r in runs["rustbpe-gpt2"])
    table.ratio(f"{megabytes} MB, gpt2 pattern, vs rustbpe", ours, rust, "rustbpe", "<= 1.0")
    table.ratio(f"{megabytes} MB, gpt2 pattern, vs HF ByteLevel regex", ours, hf["seconds"], "hf",
                "<= 1.5")
    n_bytes = runs["compiled-gpt2"][0]["bytes"]
    for name, added in (("ours", max(r["added_mb"] for r in runs["compiled-gpt2"])),
                        ("rustbpe", max(r["added_mb"] for r in runs["rustbpe-gpt2"])),
                        ("hf", hf["added_mb"])):
        table.figure(f"  memory added, {name}", f"{added:7.0f} MB = {added * 2**20 / n_bytes:5.1f} "
                     "bytes per input byte (ours at most theirs)", trainer=name,
                     added_mb=round(added))
    same = runs["compiled-gpt2"][0]["tokens"] == runs["rustbpe-gpt2"][0]["tokens"]
    table.figure("  rustbpe's merges give our token total", str(same), same=same)
    lines = interleaved_lines(4)
    n_bytes = sum(len(line.encode()) for line in lines)
    merges = bpe.train(lines, 32768, pretokenizer="gpt2")
    for name in ("gpt2", "cl100k"):
        vocabulary = bpe.Vocabulary(merges, name)
        seconds, _ = median_of(args.runs, vocabulary.count_tokens, lines, SWEEP)
        pretokenizer = vocabulary.pretokenizer
        split, _ = median_of(1, lambda pre=pretokenizer: [pre.split(line) for line in lines])
        table.figure(f"count_tokens with {name} splitting, 32768", f"{seconds:.3f} s = "
                     f"{n_bytes / seconds / 1e6:.1f} MB/s (>= 20; the regex split alone: "
                     f"{n_bytes / split / 1e6:.1f} MB/s)", seconds=round(seconds, 3),
                     split_mb_per_s=round(n_bytes / split / 1e6, 1))

    print("== a sweep of 7 sizes, every line counted at every size")
    lines = interleaved_lines(4)
    n_bytes = sum(len(line.encode()) for line in lines)

    def ours_sweep():
        merges = bpe.train(lines, SWEEP[-1])
        return bpe.count_tokens(lines, merges, SWEEP)

    def rust_sweep():
        import rustbpe

        totals = {}
        for size in SWEEP:
            tokenizer = rustbpe.Tokenizer()
            tokenizer.train_from_iterator(iter(lines), size, pattern=PEERS_PATTERN)
            totals[size] = sum(map(len, tokenizer.batch_encode(lines)))
        return totals

    ours, counts = median_of(args.runs, ours_sweep)
    rust, rust_totals = median_of(1, rust_sweep)
    table.ratio("4 MB, sweep 512..32768 vs rustbpe x7 + encode", ours, rust, "rustbpe", "<= 0.33")
    agree = {size: sum(counts[size]) for size in SWEEP} == rust_totals
    table.figure("  rustbpe gives our total at every size", str(agree), same=agree)

    print("== count_tokens with 32768 merges (one prepared vocabulary, every line, 7 sizes)")
    merges = bpe.train(lines, 32768)
    vocabulary = bpe.Vocabulary(merges)
    seconds, _ = median_of(max(args.runs, 5), vocabulary.count_tokens, lines, SWEEP)
    table.figure("count_tokens, 4 MB, 32768 merges",
                 f"{seconds:.3f} s = {n_bytes / seconds / 1e6:.1f} MB/s (>= 20 MB/s)",
                 seconds=round(seconds, 3), mb_per_s=round(n_bytes / seconds / 1e6, 1))
    seconds, _ = median_of(1, bpe.ENGINES["python"].Vocabulary(merges).count_tokens, lines, SWEEP)
    table.figure("  the pure engine, the same", f"{seconds:.3f} s = {n_bytes / seconds / 1e6:.1f} MB/s",
                 seconds=round(seconds, 3))
    print(f"   HF's encoder with our merges gives our ids on every line: "
          f"{hf_agrees_with_our_ids(merges[:4096 - 256], lines)}")

    print("== against the literal reference and the pure engine")
    small = interleaved_lines(0.1)
    ours, merges = median_of(args.runs, bpe.ENGINES["compiled"].train_detailed, small, 1024)
    pure, pure_training = median_of(1, bpe.ENGINES["python"].train_detailed, small, 1024)
    theirs, expected = median_of(1, reference.train_many, small, 1024)
    assert merges.merges == expected == pure_training.merges, "engines and reference disagree"
    table.ratio("100 KB to 1024 vs reference", ours, theirs, "reference", "exact, and far faster")
    table.ratio("100 KB to 1024 vs the pure engine", ours, pure, "python", "exact")
    ours, _ = median_of(args.runs, bpe.train, lines, 32768)
    pure, _ = median_of(1, bpe.ENGINES["python"].train_detailed, lines, 32768)
    table.ratio("4 MB to 32768 vs the pure engine", ours, pure, "python", "exact")

    print("== parity-aware training vs shared, NTREX by language, to 32768 (issue 14)")
    by_language = lines_by_language(4 if args.quick else 20)
    everything = [line for lang_lines in by_language.values() for line in lang_lines]
    shared, _ = median_of(args.runs, bpe.train, everything, 32768)
    attributed, _ = median_of(args.runs, bpe.train_by_language, by_language, 32768)
    parity, _ = median_of(args.runs, bpe.train_parity, by_language, 32768)
    table.ratio(f"{len(by_language)} languages, parity-aware vs shared", parity, shared, "shared",
                "<= 2.0")
    table.ratio("  shared with per-language attribution vs shared", attributed, shared, "shared",
                "about 1")

    print("== two trainings in two threads (the loop releases the GIL)")
    quarter = interleaved_lines(2)
    one, _ = median_of(args.runs, bpe.train, quarter, 32768)

    def two_threads():
        import threading

        threads = [threading.Thread(target=bpe.train, args=(quarter, 32768)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    both, _ = median_of(args.runs, two_threads)
    table.figure("2 MB to 32768: one training, two in threads", f"{one:.2f} s, {both:.2f} s (the same on "
                 "two free cores when the GIL is released)", one_s=round(one, 3), two_s=round(both, 3))

    if not args.quick:
        print("== growth: training to 32768 at 1, 4, 16, 64 MB (64 MB repeats NTREX's 20 MB 3.2 times)")
        growth = []
        for megabytes in (1, 4, 16, 64):
            result = train_in_fresh_process("compiled", megabytes, 32768)
            per_byte = result["added_mb"] * 2**20 / result["bytes"]
            growth.append((megabytes, result["seconds"], result["added_mb"], per_byte))
            table.figure(f"  {megabytes} MB", f"{result['seconds']:7.2f} s   "
                         f"{result['added_mb']:7.0f} MB added ({per_byte:.1f} B/byte)", megabytes=megabytes,
                         seconds=round(result["seconds"], 2), added_mb=round(result["added_mb"]),
                         bytes_per_byte=round(per_byte, 1))
        per_byte = growth[-1][3]  # the largest corpus's figure: fixed costs weigh least there
        # The text itself is in memory too: as Python strings (1 byte per ASCII character, up
        # to 4 for others; about 1.5 for NTREX) before training, and packed once (1 byte).
        budget = 24 * 2**30 * 0.9
        fits = budget / (per_byte + 2.5) / 2**30
        print(f"   the largest corpus that trains to 32768 in 24 GB: 24 GiB x 0.9 / ({per_byte:.1f} "
              f"added + ~2.5 for the text) bytes per byte = {fits:.1f} GiB (the engine takes up to "
              "2 GiB per call)")
    if args.json:
        args.json.write_text(json.dumps(table.rows, indent=2))


if __name__ == "__main__":
    main()
