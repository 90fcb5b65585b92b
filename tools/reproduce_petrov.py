"""Reproduce Petrov et al. (2023)'s published FLORES-200 token counts with the analyzer.

Given a checkout of AleksandarPetrov/tokenization-fairness (its `flores200_dataset/` and
`assets/tokenization_lengths.csv`), ingest dev+devtest in the FLORES-200 layout, count with
`--count joined` (their join of the two files) by cl100k_base and GPT-2, and compare every
language's count with their table; also their ByT5 and UTF-32 columns (the joined text's UTF-8
bytes and characters) with the analyzer's bytes and characters. Prints each difference and a
summary; exits 1 if any count differs.

    python tools/reproduce_petrov.py PATH/TO/tokenization-fairness [--db petrov.db]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

COLUMNS = {"cl100k_base": "cl100k_base", "gpt2": "GPT-2"}
"""The analyzer's catalog name of each tokenizer, and Petrov et al.'s column."""


def analyzer(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "analyzer", *args], capture_output=True,
                          text=True)
    if done.returncode:
        sys.exit(f"analyzer {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repository", type=Path)
    parser.add_argument("--db", type=Path, help="the database to use (default: a temporary one)")
    options = parser.parse_args()
    root = options.repository
    with tempfile.TemporaryDirectory() as scratch:
        db = str(options.db or Path(scratch) / "petrov.db")
        analyzer("ingest", str(root / "flores200_dataset"), "--split", "dev+devtest",
                 "--name", "petrov-flores200", "--replace", "--db", db)
        analyzer("run", "--corpus", "petrov-flores200", "--count", "joined", "--no-report",
                 *[arg for name in COLUMNS for arg in ("--tokenizer", name)], "--db", db)
        runs = json.loads(analyzer("runs", "--json", "--db", db))
        records = json.loads(analyzer("export", str(runs[-1]["id"]), "--db", db))["records"]
    ours = {(r["vocab"], r["lang"]): r for r in records}
    with open(root / "compute" / "flores_language_map.csv", newline="", encoding="utf-8") as file:
        code = {row["Language"].strip(): row["FLORES-200 code"].strip()
                for row in csv.DictReader(file, skipinitialspace=True)}
    with open(root / "assets" / "tokenization_lengths.csv", newline="", encoding="utf-8") as file:
        table = list(csv.DictReader(file))
    differ, compared = [], 0
    for row in table:
        lang = code[row["Language"]]
        for name, column in COLUMNS.items():
            record = ours[(name, lang)]
            compared += 1
            for ours_value, theirs, what in ((record["tokens"], row[column], f"{name} tokens"),
                                             (record["bytes"], row["ByT5"], "bytes (ByT5)"),
                                             (record["chars"], row["UTF-32"], "characters (UTF-32)")):
                if ours_value != int(theirs):
                    differ.append(f"{lang} ({row['Language']}): {what} {ours_value} here, "
                                  f"{theirs} published")
    for line in differ:
        print(line)
    print(f"{len(table)} languages, {compared} counts compared (cl100k_base and GPT-2, with bytes "
          f"and characters): {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
