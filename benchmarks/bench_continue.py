"""Continued training on NTREX-128: SuperBPE's two stages against ordinary BPE, per language,
and what continuing costs against training as many merges from scratch.

Ordinary BPE: one shared vocabulary of every language's lines, with o200k's split (the closest
built-in to SuperBPE's stage-1 pattern, which is o200k's without the contractions), to SIZE.
SuperBPE (Liu et al. 2025) at transition T: its first T - 256 merges are the ordinary ones (a
size is a prefix), then `bpe.continue_training` goes on to SIZE on the same lines cut by the
`superbpe` pre-tokenizer (SuperBPE's stage-2 pattern, split around its matches), and the
vocabulary counts with that pre-tokenizer. Each training runs in a fresh process, so that its
peak memory minus the memory before it is what it added. Needs ../shared/corpora/ntrex128.

    python benchmarks/bench_continue.py                  # 4 MB of lines, to 32768
    python benchmarks/bench_continue.py --megabytes 1 --size 8192
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PIVOT = "eng_Latn"

STAGE = """
import sys, time, json, pickle
sys.path.insert(0, {here!r})
from bench_bpe import lines_by_language
from analyzer import bpe
by_language = lines_by_language({megabytes!r})
lines = [line for lang in sorted(by_language) for line in by_language[lang]]
def status(key):
    return int(next(l.split()[1] for l in open('/proc/self/status') if l.startswith(key)))
base = pickle.loads(open({base!r}, "rb").read())
before = status('VmRSS')
start = time.perf_counter()
if {continued!r}:
    result = bpe.continue_training(lines, base, {size}, pretokenizer={pretokenizer!r})
else:
    result = bpe.train_detailed(lines, {size}, pretokenizer={pretokenizer!r})
seconds = time.perf_counter() - start
added = (status('VmHWM') - before) / 1024
print(json.dumps({{"seconds": seconds, "added_mb": added, "merges": result.merges}}))
"""


def train_in_fresh_process(megabytes: float, size: int, pretokenizer: str, base=None) -> dict:
    """Seconds, MB added and the merges of one training (`base`: continued from it)."""
    import pickle
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".pickle") as file:
        file.write(pickle.dumps(base or []))
        file.flush()
        code = STAGE.format(here=str(HERE), megabytes=megabytes, size=size,
                            pretokenizer=pretokenizer, base=file.name, continued=base is not None)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    found = json.loads(done.stdout.strip().splitlines()[-1])
    found["merges"] = [((left, right), new_id) for (left, right), new_id in found["merges"]]
    return found


def measure(by_language: dict[str, list[str]], merges, pretokenizer: str) -> dict[str, dict]:
    """Per language: tokens, and the share of them that are superwords (a space inside)."""
    from analyzer import bpe

    vocabulary = bpe.Vocabulary(merges, pretokenizer)
    found = {}
    for lang, lines in by_language.items():
        ids = [token for line in lines for token in vocabulary.encode(line)]
        superwords = sum(1 for token in ids if b" " in vocabulary.token_bytes(token).strip(b" "))
        found[lang] = {"tokens": len(ids), "superwords": superwords / max(1, len(ids))}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=4.0)
    parser.add_argument("--size", type=int, default=32768)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_bpe import ntrex_lines

    by_language = ntrex_lines(args.megabytes, f"to {args.size}")

    ordinary = train_in_fresh_process(args.megabytes, args.size, "o200k")
    print(f"ordinary BPE (o200k split): {ordinary['seconds']:.2f} s, "
          f"+{ordinary['added_mb']:.0f} MB")
    results = {"ordinary": measure(by_language, ordinary["merges"], "o200k")}
    for share in (0.5, 0.8):
        transition = int(args.size * share)
        base = ordinary["merges"][:transition - 256]
        continued = train_in_fresh_process(args.megabytes, args.size, "superbpe", base)
        scratch = train_in_fresh_process(args.megabytes, 256 + args.size - transition, "superbpe")
        n = args.size - transition
        print(f"SuperBPE stage 2 from T = {transition} ({share:.0%}): {n} merges continued in "
              f"{continued['seconds']:.2f} s, +{continued['added_mb']:.0f} MB; the same number "
              f"from bytes: {scratch['seconds']:.2f} s, +{scratch['added_mb']:.0f} MB "
              f"(continued / scratch: {continued['seconds'] / scratch['seconds']:.2f}x time)")
        results[f"superbpe@{transition}"] = measure(by_language, base + continued["merges"],
                                                    "superbpe")

    names = list(results)
    pivot = {name: results[name][PIVOT]["tokens"] for name in names}
    print()
    print("premium vs English (tokens / English's tokens); superword share of the tokens")
    print(f"{'language':<10}" + "".join(f"{name:>22}" for name in names))
    order = sorted(by_language, key=lambda lang: -results["ordinary"][lang]["tokens"])
    for lang in order:
        cells = "".join(f"{results[n][lang]['tokens'] / pivot[n]:>14.2f}"
                        f"{results[n][lang]['superwords']:>7.0%} " for n in names)
        print(f"{lang:<10}{cells}")
    totals = {name: sum(found["tokens"] for found in results[name].values()) for name in names}
    print(f"{'all':<10}" + "".join(f"{totals[n] / totals['ordinary']:>14.3f}x{'':>7}" for n in names))
    print(f"{PIVOT:<10}" + "".join(f"{pivot[n] / pivot['ordinary']:>14.3f}x{'':>7}" for n in names))


if __name__ == "__main__":
    main()
