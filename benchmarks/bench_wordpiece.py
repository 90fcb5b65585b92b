"""WordPiece training: the analyzer's engine (`analyzer.wordpiece`) beside Hugging Face's
`WordPieceTrainer`, which it reproduces token for token, measured side by side in this one run.

On NTREX-128 (58 languages, 20 MB), cut by a pre-tokenizer (cl100k's split or `words`). Both
trainers get the same distinct chunks with their counts, written in GPT-2's byte-level
alphabet, both byte alphabets first (ids 0..511), as `analyzer.external.library_trained` trains
WordPiece:

- ours: `analyzer.wordpiece.train` on the chunks (packed in C, then the compiled engine);
- Hugging Face: `huggingface_wordpiece` (`WordPieceTrainer`, the byte symbols as its special
  tokens), each chunk given as often as it occurs (its trainer takes no counts).

Each training runs in a fresh process (`bench_sources.in_fresh_process`), `--runs` times,
alternating the trainers: the median time (training only, from the dict of chunk counts, not
reading or cutting the corpus), its peak memory (VmHWM, the whole process: the corpus and its
chunks included), and whether the two vocabularies are equal, entry for entry in id order.

    python benchmarks/bench_wordpiece.py                      # cl100k and words, 4096 and 32768
    python benchmarks/bench_wordpiece.py --split cl100k --size 32768 --runs 5

Target: ours at most 1/20 of Hugging Face's time, and the same vocabulary at every setting.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_bpe import ntrex_lines  # noqa: E402  (the benchmarks folder is not a package)
from bench_sources import in_fresh_process, peak_mb  # noqa: E402
from bench_unigram import chunk_counts  # noqa: E402

TRAINERS = ("ours", "huggingface")


def phase_train(trainer: str, split: str, size: str, out: str) -> dict:
    """Train in this process; write the vocabulary (each id's piece) to `out`."""
    counts = chunk_counts(split, ntrex_lines(100, f"{trainer}, {split}, {size}"))
    from analyzer.external.library_trained import huggingface_wordpiece, spell
    from analyzer.wordpiece import train
    start = time.perf_counter()
    if trainer == "ours":
        vocab = [spell(piece) for piece in train(counts, int(size))]
    else:
        vocab = huggingface_wordpiece(counts, int(size))
    seconds = time.perf_counter() - start
    Path(out).write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    return {"seconds": seconds, "peak_mb": peak_mb(), "chunks": len(counts)}


PHASES = {"train": phase_train}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", action="append", help="cl100k and words by default")
    parser.add_argument("--size", action="append", type=int, help="4096 and 32768 by default")
    parser.add_argument("--runs", type=int, default=3, help="trainings per trainer (median)")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](*args.args)))
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-wordpiece-") as tmp:
        for split in args.split or ["cl100k", "words"]:
            for size in args.size or [4096, 32768]:
                results: dict[str, list[dict]] = {trainer: [] for trainer in TRAINERS}
                vocabs = {}
                for run in range(args.runs):  # alternate the trainers run by run
                    for trainer in TRAINERS if run % 2 == 0 else TRAINERS[::-1]:
                        out = Path(tmp) / f"{trainer}-{split}-{size}.json"
                        results[trainer].append(in_fresh_process("train", trainer, split, size, out,
                                                                 script=Path(__file__)))
                        vocabs.setdefault(trainer, json.loads(out.read_text(encoding="utf-8")))
                equal = vocabs["ours"] == vocabs["huggingface"]
                row = {"split": split, "size": size, "chunks": results["ours"][0]["chunks"],
                       "equal": equal}
                for trainer in TRAINERS:
                    row[f"{trainer}_seconds"] = statistics.median(r["seconds"] for r in results[trainer])
                    row[f"{trainer}_peak_mb"] = statistics.median(r["peak_mb"] for r in results[trainer])
                row["ratio"] = row["ours_seconds"] / row["huggingface_seconds"]
                rows.append(row)
                print(f"{split:>7} {size:>6} ({row['chunks']:,} chunks): ours {row['ours_seconds']:6.3f} s "
                      f"{row['ours_peak_mb']:6.0f} MB, Hugging Face {row['huggingface_seconds']:6.2f} s "
                      f"{row['huggingface_peak_mb']:6.0f} MB, ours / HF {row['ratio']:.3f} "
                      f"(1/{1 / row['ratio']:.0f}), vocabularies {'equal' if equal else 'DIFFERENT'}",
                      flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
