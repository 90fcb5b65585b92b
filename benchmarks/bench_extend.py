"""Extending a production tokenizer on NTREX-128: what learning N added merges over the base's
ids costs, against training N merges from bytes on the same lines, and counting with them.

Extension: the base's own pre-tokenizer cuts every line, its library encodes each distinct
chunk (tiktoken, or Hugging Face tokenizers), and the engine trains N merges over those ids
(`bpe.train_by_language` with the base); then every line is counted at +N as the base's
library would count the written tokenizer (`analyzer.external.extension`). From scratch: the
shared BPE of the same lines with the closest built-in split (`o200k`, or `llama3`), N merges
from the 256 bytes. Each training runs in a fresh process, so that its peak memory minus the
memory before it is what it added. Needs ../shared/corpora/ntrex128.

    python benchmarks/bench_extend.py                        # o200k_base, 4 MB, +32768
    python benchmarks/bench_extend.py --base llama3 --megabytes 20 --added 8192
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPLIT_OF = {"o200k_base": "o200k", "cl100k_base": "cl100k", "llama3": "llama3",
            "llama4": "o200k", "qwen3": "llama3", "deepseek-v3": "llama3"}

STAGE = """
import sys, time, json
sys.path.insert(0, {here!r})
from bench_bpe import lines_by_language
from analyzer import bpe
by_language = lines_by_language({megabytes!r})
def status(key):
    return int(next(l.split()[1] for l in open('/proc/self/status') if l.startswith(key)))
found = {{}}
if {extend!r}:
    from analyzer.external.extension import Extended, extension_base
    base = extension_base({base!r})
    before = status('VmRSS')
    start = time.perf_counter()
    training = bpe.train_by_language(by_language, base.size + {added}, pretokenizer=base, base=base)
    found["seconds"] = time.perf_counter() - start
    found["added_mb"] = (status('VmHWM') - before) / 1024
    start = time.perf_counter()
    extended = Extended(base, training.merges)
    lines = [line for lang in sorted(by_language) for line in by_language[lang]]
    from analyzer.bpe.pretokenize import chunk_texts
    chunked = chunk_texts(lines, base)
    traces = [extended.added.trace(ids) for ids in base.encode_chunks(chunked.chunks)]
    total = sum(traces[c].tokens_at({added}) for of in chunked.of_text for c in of)
    found["count_seconds"] = time.perf_counter() - start
    found["base_tokens"] = sum(base.count(lines))
    found["tokens"] = total
else:
    before = status('VmRSS')
    start = time.perf_counter()
    training = bpe.train_by_language(by_language, 256 + {added}, pretokenizer={split!r})
    found["seconds"] = time.perf_counter() - start
    found["added_mb"] = (status('VmHWM') - before) / 1024
found["merges"] = len(training.merges)
print(json.dumps(found))
"""


def stage(megabytes: float, added: int, base: str, extend: bool) -> dict:
    code = STAGE.format(here=str(HERE), megabytes=megabytes, added=added, base=base,
                        split=SPLIT_OF.get(base, "o200k"), extend=extend)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="o200k_base")
    parser.add_argument("--megabytes", type=float, default=4.0)
    parser.add_argument("--added", type=int, default=32768)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_bpe import ntrex_lines

    ntrex_lines(args.megabytes, f"+{args.added} merges")
    extended = stage(args.megabytes, args.added, args.base, True)
    scratch = stage(args.megabytes, args.added, args.base, False)
    print(f"extending {args.base}: {extended['merges']} merges over its ids in "
          f"{extended['seconds']:.2f} s (its pre-tokenizer and library included), "
          f"+{extended['added_mb']:.0f} MB; counting every line at +{extended['merges']}: "
          f"{extended['count_seconds']:.2f} s; tokens {extended['base_tokens']:,} -> "
          f"{extended['tokens']:,} ({extended['tokens'] / extended['base_tokens'] - 1:+.1%})")
    print(f"from scratch ({SPLIT_OF.get(args.base, 'o200k')} split, from bytes): "
          f"{scratch['merges']} merges in {scratch['seconds']:.2f} s, +{scratch['added_mb']:.0f} MB")
    print(f"extension / scratch: {extended['seconds'] / scratch['seconds']:.2f}x time, "
          f"{extended['added_mb'] / max(1.0, scratch['added_mb']):.2f}x memory")


if __name__ == "__main__":
    main()
