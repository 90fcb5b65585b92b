"""What training data does to the answer (issue 39): on NTREX-128 as the measured corpus, each
language's premium under a shared and a parity-aware vocabulary trained on NTREX itself, against
the same vocabularies trained on a monolingual sample 10x to 100x larger.

The larger samples are generated per language by `textgen.py` (a word model fitted on NTREX;
`--equal`: the same bytes for every language, a uniform mix), and, where real text is at hand,
real: the New Testament of christos-c/bible-corpus in Gujarati, Swahili, Ukrainian, Zulu and
(part of) Armenian stands in for the generated text of those languages in the `real` source;
a Bible is smaller than the budget, so a `matched` source cuts those languages' generated text
to the Bibles' bytes, and what the real domain does is told from what the smaller share does.

    python benchmarks/study_training_data.py --scales 10,100 --vocab 32768 --out /tmp/study

Prints, per language, the premium trained on NTREX and on each source, and the change; writes
them to `<out>/premiums.csv`. Every run is an ordinary `analyzer run` on one database.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
NTREX = HERE.parents[1] / "shared" / "corpora" / "ntrex128"
BIBLES = Path("/work/.mirror/christos-c+bible-corpus/repo")
BIBLE_FILES = {"guj_Gujr": "Gujarati-NT", "swh_Latn": "Swahili-NT", "ukr_Cyrl": "Ukranian-NT",
               "zul_Latn": "Zulu-NT", "hye_Armn": "Armenian-PART"}
"""NTREX languages with a (New Testament) Bible in the mirror of christos-c/bible-corpus."""


def analyzer(db: Path, *args: object) -> str:
    done = subprocess.run([sys.executable, "-m", "analyzer", *map(str, args), "--db", str(db)],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"analyzer {' '.join(map(str, args))} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def bible_verses(name: str) -> list[str]:
    """The verses of one Bible of the mirror (a bare git repository: read with git show)."""
    xml = subprocess.run(["git", "--git-dir", str(BIBLES), "show", f"HEAD:bibles/{name}.xml"],
                         capture_output=True, check=True).stdout.decode("utf-8")
    verses = re.findall(r'<seg[^>]*type="verse"[^>]*>(.*?)</seg>', xml, flags=re.S)
    return [" ".join(html.unescape(verse).split()) for verse in verses if verse.strip()]


def with_bibles(folder: Path, out: Path, text: Callable[[str, Path], bytes]) -> Path:
    """`out`: the generated `folder`, linked, but for the languages with a Bible, whose file is
    `text(lang, generated file)`."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for path in folder.iterdir():
        lang = path.name.split(".")[0]
        if lang in BIBLE_FILES:
            (out / f"{lang}.txt").write_bytes(text(lang, path))
        else:
            (out / path.name).symlink_to(path.resolve())
    return out


def lines_within(data: bytes, size: int) -> bytes:
    """The whole lines of `data` within its first `size` bytes."""
    data = data[:size]
    return data[:data.rfind(b"\n") + 1]


def premiums(db: Path, run_id: int) -> pd.DataFrame:
    from analyzer.metrics import language_metrics, load_run_data
    from analyzer.store import open_db

    frame = language_metrics(load_run_data(open_db(db, create=False), run_id, fairness=False))
    return frame[["vocab", "lang", "premium"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default="10,100", help="sample sizes, times NTREX's bytes")
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--pretokenize", default="o200k")
    parser.add_argument("--out", type=Path, default=Path("/tmp/study_training_data"))
    parser.add_argument("--keep", action="store_true", help="reuse generated text in --out")
    args = parser.parse_args()
    if not NTREX.is_dir():
        raise SystemExit(f"{NTREX} is not here: the study needs the shared NTREX corpus")
    args.out.mkdir(parents=True, exist_ok=True)
    db = args.out / "study.db"
    for stale in (db, db.with_name(db.name + ".chunks")):
        if stale.is_dir():
            shutil.rmtree(stale)
        elif stale.exists():
            stale.unlink()
    analyzer(db, "ingest", NTREX / "text", "--name", "ntrex128")
    texts = sorted((NTREX / "text").glob("*.txt"))
    ntrex_bytes = sum(path.stat().st_size for path in texts)
    print(f"NTREX: {len(texts)} languages, {ntrex_bytes / 1e6:.1f} MB", flush=True)
    common = ["--vocab", args.vocab, "--pretokenize", args.pretokenize, "--parity",
              "--no-per-language", "--no-report", "--json"]
    runs: dict[str, int] = {}

    def run(label: str, *extra: object) -> None:
        started = time.perf_counter()
        out = analyzer(db, "run", *common, *extra)
        runs[label] = json.loads(out)["run"]
        print(f"{label}: run {runs[label]} in {time.perf_counter() - started:.0f} s", flush=True)

    run("ntrex")
    scales = sorted(map(int, args.scales.split(",")))
    for scale in scales:
        folder = args.out / f"gen{scale}x"
        total = scale * ntrex_bytes
        if not (args.keep and folder.is_dir()):
            shutil.rmtree(folder, ignore_errors=True)
            subprocess.run([sys.executable, str(HERE / "textgen.py"), str(folder), "--bytes",
                            str(total), "--equal"], check=True, stdout=subprocess.DEVNULL)
        analyzer(db, "sources", "add", f"gen{scale}x", folder)
        run(f"generated {scale}x", "--train-on", f"gen{scale}x", "--mix", "uniform",
            "--train-bytes", total)
        if BIBLES.is_dir() and scale == scales[0]:  # a New Testament is about 10x NTREX
            real = with_bibles(folder, args.out / f"real{scale}x", lambda lang, _: (
                "\n".join(bible_verses(BIBLE_FILES[lang])) + "\n").encode())
            analyzer(db, "sources", "add", f"real{scale}x", real)
            run(f"real {scale}x", "--train-on", f"real{scale}x", "--mix", "uniform",
                "--train-bytes", total)
            # A Bible is smaller than its language's budget: the same bytes of generated text
            # tell what the smaller share does from what the real domain does.
            sizes = {path.stem: path.stat().st_size for path in real.glob("*.txt")}
            matched = with_bibles(folder, args.out / f"matched{scale}x",
                                  lambda lang, path, sizes=sizes: lines_within(path.read_bytes(),
                                                                               sizes[lang]))
            analyzer(db, "sources", "add", f"matched{scale}x", matched)
            run(f"generated {scale}x, the Bibles' bytes", "--train-on", f"matched{scale}x",
                "--mix", "uniform", "--train-bytes", total)
    frames = []
    for label, run_id in runs.items():
        frame = premiums(db, run_id)
        frame["training"] = label
        frames.append(frame)
    table = pd.concat(frames).pivot_table(index=["vocab", "lang"], columns="training",
                                          values="premium")
    table = table[list(runs)]
    for label in list(runs)[1:]:
        table[f"change {label}"] = table[label] / table["ntrex"] - 1
    table.to_csv(args.out / "premiums.csv")
    with pd.option_context("display.max_rows", None, "display.width", 200):
        print(table.round(3))


if __name__ == "__main__":
    main()
