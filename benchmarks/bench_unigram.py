"""Unigram training (issue 42): the analyzer's engine beside Hugging Face's UnigramTrainer and
SentencePiece (`model_type=unigram`), measured side by side in this one run.

On NTREX-128 (58 languages x 1,997 lines, 20 MB), cut by a pre-tokenizer (cl100k's split,
`words`, or `none`: each line one chunk). Every trainer gets the same distinct chunks with
their counts, written in GPT-2's byte-level alphabet (each UTF-8 byte one character), pieces of
at most 16 of them:

- ours: `analyzer.unigram.train` on the chunks' bytes (every core);
- Hugging Face: `UnigramTrainer` (`max_piece_length=16`, the 256 byte characters as its
  initial alphabet), each chunk given as often as it occurs (its trainer takes no counts);
- SentencePiece: a TSV of chunk and count (`input_format=tsv`), no normalization, no
  splitting by script, number or whitespace, `character_coverage=1`, `num_threads` = the
  cores; its vocabulary has one more entry, its unknown piece.

Each training runs in a fresh process: its time (training only, not reading the corpus) and
its peak memory (ru_maxrss). Then each model counts every language's lines (chunk by chunk:
ours and Hugging Face's by Hugging Face's Unigram encoder from the vocabulary, SentencePiece's
by its own), and the table gives each trainer's total tokens per language against
SentencePiece's: the largest difference and the median.

    python benchmarks/bench_unigram.py                       # cl100k at 4096 and 32768, all three
    python benchmarks/bench_unigram.py --split words --split none --size 32768
    python benchmarks/bench_unigram.py --skip huggingface    # ours and SentencePiece only
    python benchmarks/bench_unigram.py --timeout 1800        # a trainer still running is stopped
    python benchmarks/bench_unigram.py --size 4096 --runs 3  # medians of 3 (a trainer of a
                                                             # minute or more runs once)

Targets: with the cl100k split at 4096, ours at most 1/50 of Hugging Face's time and at most
0.2 of SentencePiece's (and no slower than SentencePiece anywhere); tokens per language within
1 % of SentencePiece's; `none` finishes.

Last figures (December 2026, two cores, a quiet machine, side by side, ours the median of 3):
cl100k 4096: ours 3.5 s, HF 178.0 s, SP 48.8 s: 1/51 of HF, 0.073 of SP; a second run 3.5 s,
HF 201.1 s, SP 51.1 s: 1/57, 0.068 (the engine a session
before: 4.5 s, HF 215.7 s, SP 52.6 s: 1/48, 0.085; two before: 5.1 s, HF 183.6 s: 1/36).

Earlier (beside another helper's work at load 4 to 6; one run of each trainer side by side;
docs/explanation/unigram.md has the table):

    cl100k  4096: ours 13.7 s 0.44 GB, HF 557.4 s 1.8 GB, SP 87.5 s 0.7 GB: 1/41 of HF, 0.16 of SP
    cl100k 32768: ours 14.3 s 0.45 GB, HF 307.2 s 1.8 GB, SP 111.7 s 0.7 GB: 1/21, 0.13
    words  32768: ours 15.9 s 0.69 GB, HF 579.7 s 2.1 GB, SP 135.0 s 0.7 GB: 1/36, 0.12

On a quiet machine ours takes 6.3 s (cl100k, 4096) and 5.0 s (32768), medians of 3; a
side-by-side run at 4096 begun at load 1.5: ours 8.5 s, HF 337.7 s, SP 119.3 s (1/40, 0.07).
Before this engine's latest changes: ours 31.1 s, 1.2 GB at 4096 (1/17).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_bpe import ntrex_lines  # noqa: E402  (the benchmarks folder is not a package)

TRAINERS = ("ours", "huggingface", "sentencepiece")
MAX_PIECE = 16


def chunk_counts(split: str, lines: dict[str, list[str]]) -> dict[str, int]:
    from analyzer.bpe.pretokenize import distinct_chunks, resolve
    texts = [line for lang_lines in lines.values() for line in lang_lines]
    splitter = resolve(split)
    if splitter is None:
        counts: dict[str, int] = {}
        for text in texts:
            counts[text] = counts.get(text, 0) + 1
        return counts
    chunks, numbers = distinct_chunks(texts, splitter)
    return dict(zip(chunks, numbers))


def train(trainer: str, split: str, size: int, out: Path,
          counts: dict[str, int] | None = None) -> dict:
    """Train in this process on NTREX's chunks (or on `counts`, another text's); write the
    model to `out`; the seconds and peak memory."""
    if counts is None:
        counts = chunk_counts(split, ntrex_lines(100, f"{trainer}, {split}, {size}"))
    from analyzer.external.library_trained import BYTE_CHARS, to_byte_chars
    cores = len(os.sched_getaffinity(0))
    if trainer == "ours":
        from analyzer.unigram import train as train_unigram
        start = time.perf_counter()
        trained = train_unigram(counts, size)
        seconds = time.perf_counter() - start
        vocab = [("".join(BYTE_CHARS[b] for b in piece), score)
                 for piece, score in zip(trained.pieces, trained.scores)]
        out.write_text(json.dumps(vocab, ensure_ascii=False))
    elif trainer == "huggingface":
        import tokenizers
        chars = {chunk: to_byte_chars(chunk) for chunk in counts}

        def batches():
            batch: list[str] = []
            for chunk, count in counts.items():
                batch.extend([chars[chunk]] * count)
                if len(batch) >= 4096:
                    yield batch
                    batch = []
            yield batch
        tokenizer = tokenizers.Tokenizer(tokenizers.models.Unigram())
        hf_trainer = tokenizers.trainers.UnigramTrainer(
            vocab_size=size, initial_alphabet=list(BYTE_CHARS.values()), special_tokens=[],
            show_progress=False, max_piece_length=MAX_PIECE)
        start = time.perf_counter()
        tokenizer.train_from_iterator(batches(), hf_trainer, length=len(counts))
        seconds = time.perf_counter() - start
        vocab = json.loads(tokenizer.to_str())["model"]["vocab"]
        out.write_text(json.dumps(vocab, ensure_ascii=False))
    else:
        import sentencepiece as spm
        with tempfile.TemporaryDirectory() as tmp:
            tsv = Path(tmp) / "chunks.tsv"
            with tsv.open("w", encoding="utf-8") as handle:
                for chunk, count in counts.items():
                    if chunk:
                        handle.write(f"{to_byte_chars(chunk)}\t{count}\n")
            longest = max(len(chunk.encode("utf-8")) for chunk in counts)
            start = time.perf_counter()
            spm.SentencePieceTrainer.train(
                input=str(tsv), input_format="tsv", model_prefix=str(out.with_suffix("")),
                model_type="unigram", vocab_size=size + 1, character_coverage=1.0,
                max_sentencepiece_length=MAX_PIECE, split_by_unicode_script=False,
                split_by_number=False, split_by_whitespace=False, split_digits=False,
                add_dummy_prefix=False, remove_extra_whitespaces=False,
                normalization_rule_name="identity", byte_fallback=False, bos_id=-1, eos_id=-1,
                unk_id=0, hard_vocab_limit=False, num_threads=cores,
                max_sentence_length=max(4192, 4 * longest), input_sentence_size=0,
                train_extremely_large_corpus=split == "none", minloglevel=2)
            seconds = time.perf_counter() - start
        out.with_suffix(".model").rename(out)
    return {"seconds": seconds,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def count(trainer: str, split: str, model: Path) -> dict[str, int]:
    """Each language's tokens, chunk by chunk."""
    from analyzer.bpe.pretokenize import resolve
    from analyzer.external.library_trained import to_byte_chars
    lines = ntrex_lines(100, f"counting {trainer}")
    splitter = resolve(split)
    if trainer == "sentencepiece":
        import sentencepiece as spm
        processor = spm.SentencePieceProcessor(model_file=str(model))

        def encode(chunks: list[str]) -> list[int]:
            return [len(ids) for ids in processor.encode(chunks)]
    else:
        import tokenizers
        vocab = [tuple(entry) for entry in json.loads(model.read_text())]
        tokenizer = tokenizers.Tokenizer(tokenizers.models.Unigram(vocab, None, False))

        def encode(chunks: list[str]) -> list[int]:
            return [len(e.ids) for e in tokenizer.encode_batch(chunks, add_special_tokens=False)]
    totals = {}
    cache: dict[str, int] = {}
    for lang, texts in lines.items():
        chunks = [c for i, text in enumerate(texts)
                  for c in (splitter.split(text, i) if splitter else [text])]
        new = list({c: None for c in chunks if c and c not in cache})  # each distinct chunk once
        if new:
            for chunk, n in zip(new, encode([to_byte_chars(c) for c in new])):
                cache[chunk] = n
        totals[lang] = sum(cache[c] for c in chunks if c)
    return totals


def child(args) -> None:
    result = train(args.trainer, args.split, args.size, Path(args.model))
    print(json.dumps(result))


def in_fresh_process(trainer: str, split: str, size: int, model: Path, timeout: float) -> dict | None:
    command = [sys.executable, __file__, "--child", trainer, split, str(size), str(model)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


ONCE_FROM = 60.0
"""Seconds from which a trainer is not run again (Hugging Face's trainer takes minutes)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=4, metavar=("TRAINER", "SPLIT", "SIZE", "MODEL"))
    parser.add_argument("--split", action="append", help="cl100k (default), words, none")
    parser.add_argument("--size", action="append", type=int, help="4096 and 32768 by default")
    parser.add_argument("--skip", action="append", default=[], choices=TRAINERS)
    parser.add_argument("--runs", type=int, default=1,
                        help="trainings per trainer (median); a trainer whose first training "
                             f"took {ONCE_FROM:.0f} s or more is not run again")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds a training may take")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    if args.child:
        args.trainer, args.split, size, args.model = args.child
        args.size = int(size)
        child(args)
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for split in args.split or ["cl100k"]:
            for size in args.size or [4096, 32768]:
                results, tokens = {}, {}
                trainers = [t for t in TRAINERS if t not in args.skip]
                for run in range(args.runs):  # alternate the trainers run by run
                    for trainer in trainers if run % 2 == 0 else trainers[::-1]:
                        first = results.get(trainer, [None])[0]
                        if first is None and trainer in results:
                            continue  # it did not finish: not again
                        if first and first["seconds"] >= ONCE_FROM:
                            continue  # a long training varies less than a short one
                        model = Path(tmp) / f"{trainer}-{split}-{size}"
                        result = in_fresh_process(trainer, split, size, model, args.timeout)
                        results.setdefault(trainer, []).append(result)
                        if result and trainer not in tokens:
                            tokens[trainer] = count(trainer, split, model)
                for trainer in trainers:
                    done = [r for r in results[trainer] if r]
                    row = {"split": split, "size": size, "trainer": trainer}
                    if not done:
                        row["seconds"] = None
                        print(f"{split:>7} {size:>6} {trainer:<14} did not finish in {args.timeout:.0f} s")
                    else:
                        row["seconds"] = statistics.median(r["seconds"] for r in done)
                        row["peak_mb"] = statistics.median(r["peak_mb"] for r in done)
                        total = sum(tokens[trainer].values())
                        row["tokens"] = total
                        line = (f"{split:>7} {size:>6} {trainer:<14} {row['seconds']:8.1f} s "
                                f"{row['peak_mb']:7.0f} MB  {total:>10,} tokens")
                        if "sentencepiece" in tokens and trainer != "sentencepiece":
                            theirs = tokens["sentencepiece"]
                            diffs = [100 * (tokens[trainer][lang] - theirs[lang]) / theirs[lang]
                                     for lang in theirs]
                            row["max_pct_vs_sentencepiece"] = max(diffs, key=abs)
                            row["median_pct_vs_sentencepiece"] = statistics.median(diffs)
                            line += ("  vs SentencePiece per language: median "
                                     f"{row['median_pct_vs_sentencepiece']:+.2f} %, largest "
                                     f"{row['max_pct_vs_sentencepiece']:+.2f} %")
                        print(line, flush=True)
                    rows.append(row)
                ours = next((r for r in rows[-len(trainers):] if r["trainer"] == "ours"), None)
                for peer in ("huggingface", "sentencepiece"):
                    theirs = next((r for r in rows[-len(trainers):] if r["trainer"] == peer), None)
                    if ours and theirs and ours["seconds"] and theirs["seconds"]:
                        ratio = ours["seconds"] / theirs["seconds"]
                        print(f"{split:>7} {size:>6} ours / {peer}: {ratio:.3f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
