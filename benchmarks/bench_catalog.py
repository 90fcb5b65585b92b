"""Every catalog tokenizer on this machine, measured on NTREX-128 as `analyzer run --tokenizer
all-available` does it: the time to load and to count each, the whole run's time, and the
premiums vs English of a few languages far from it (Burmese, absent from NTREX, from UDHR).

    python benchmarks/bench_catalog.py                 # the catalog tokenizers available here
    ANALYZER_TOKENIZER_STORE=DIR python benchmarks/bench_catalog.py   # with a filled store

A tokenizer missing here is listed with the command that fetches it (analyzer tokenizers get).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pandas as pd

from analyzer.corpus import read_corpus
from analyzer.external import available_tokenizers, resolve_tokenizer
from analyzer.metrics import language_metrics, load_run_data
from analyzer.runs import RunSettings, execute_run
from analyzer.store import open_db, save_corpus, vocabularies

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
SHOWN = ["rus_Cyrl", "hin_Deva", "kor_Hang", "jpn_Jpan", "tha_Thai", "amh_Ethi", "mya_Mymr",
         "yor_Latn"]


def measure(corpus: str, names: list[str]) -> tuple[pd.DataFrame, float, dict[str, float]]:
    """(premiums by tokenizer and language, the run's seconds, counting seconds by tokenizer)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = open_db(Path(tmp) / "bench.db")
        save_corpus(db, read_corpus(CORPORA / corpus / "text"), corpus)
        start = time.perf_counter()
        run_id = execute_run(db, RunSettings(sizes=[], tokenizers=names))
        seconds = time.perf_counter() - start
        frame = language_metrics(load_run_data(db, run_id))
        counting = {v.scope: v.seconds or 0.0 for v in vocabularies(db, run_id)}
    return frame.pivot(index="vocab", columns="lang", values="premium"), seconds, counting


def main() -> None:
    if not (CORPORA / "ntrex128").is_dir():
        raise SystemExit(f"{CORPORA} is absent: this benchmark needs ../shared/corpora")
    names, skipped = available_tokenizers()
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    loading = {}
    for name in names:
        start = time.perf_counter()
        resolve_tokenizer(name, downloads=False)
        loading[name] = time.perf_counter() - start
    ntrex, seconds, counting = measure("ntrex128", names)
    udhr, udhr_seconds, _ = measure("udhr", names)
    print(f"\nNTREX-128 (58 languages x 1,501 sentences), {len(names)} tokenizers: the whole run "
          f"{seconds:.1f} s (loading them all again inside it); UDHR {udhr_seconds:.1f} s\n")
    print(f"{'tokenizer':16}{'load s':>8}{'count s':>9}  " + "".join(f"{lang[:3]:>6}" for lang in SHOWN))
    for name in names:
        cells = []
        for lang in SHOWN:
            source = ntrex if lang in ntrex.columns else udhr
            value = source.loc[name, lang] if lang in source.columns else float("nan")
            cells.append(f"{value:6.2f}")
        print(f"{name:16}{loading[name]:8.2f}{counting[name]:9.2f}  " + "".join(cells))
    print("\npremium = tokens of the language / tokens of English for the same sentences; "
          "mya (Burmese) is not in this NTREX subset: its column is UDHR's.")


if __name__ == "__main__":
    main()
