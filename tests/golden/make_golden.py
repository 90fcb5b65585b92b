"""Write the golden results that tests/test_golden.py compares every later version against.

Run once, on the version whose results are the contract:

    python tests/golden/make_golden.py              # harbour_town.json.gz (commit 27aa7be)
    python tests/golden/make_golden.py every-kind   # every_kind.json.gz (issue 38's start)
    python tests/golden/make_golden.py presentation # its printed tables only (issue 52)

The first: two runs on the shipped sample corpus, the end of the first vertical slice, before
any engine or layout change: every stored merge and count, and the documented JSON (`show
--json`, `export`) with the fields that depend on the clock removed. The second: one run with a
vocabulary of every kind (shared, per language, parity-aware, SuperBPE and a language's own,
Unigram and WordPiece shared and per language, an extension, a production tokenizer, imported
counts), and everything the command line prints of it, written before the architecture of
issue 38 so that the restructuring is shown to change none of it. `presentation` writes again
only what the command line prints as tables and lists (`PRINTED`), when their presentation
changes by design: the numbers stored, shown as JSON and exported stay the contract.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import tempfile
from pathlib import Path

from typer.testing import CliRunner

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parents[1] / "parallel_corpora" / "harbour_town"
GOLDEN = HERE / "harbour_town.json.gz"
EVERY_KIND = HERE / "every_kind.json.gz"

RUNS = [
    ["--vocab", "256,300,512,1024", "--cross"],
    ["--vocab", "300,700", "--holdout", "0.25", "--seed", "3", "--tie-break", "first",
     "--min-pair-count", "1", "--no-per-language"],
]
CLOCK_FIELDS = {"started", "finished", "seconds", "engine_version"}


def without_clock(value):
    """The document with every timing and version field dropped, recursively."""
    if isinstance(value, dict):
        return {key: without_clock(item) for key, item in value.items() if key not in CLOCK_FIELDS}
    if isinstance(value, list):
        return [without_clock(item) for item in value]
    return value


def without_paths(value):
    """The document with this machine's file paths in `source` fields made `<path>` (where a
    tokenizer's file was found differs between machines; its SHA-256 does not)."""
    if isinstance(value, dict):
        return {key: re.sub(r"/\S+", "<path>", item) if key == "source" and isinstance(item, str)
                else without_paths(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_paths(item) for item in value]
    return value


UNIGRAM_KINDS = {"unigram", "language-unigram"}


def without_unigram_ids(document: dict) -> dict:
    """The export without what depends on the ids Hugging Face's Unigram trainer gives its
    pieces: the same pieces, scores and counts in every training, but scores that differ in
    their last bit (sums in a hash map's order) and so ties listed in another order. Its mean
    rank (of ids) and its models' SHA-256 are left out; everything else stays."""
    for record in document.get("records", []):
        if record.get("kind") in UNIGRAM_KINDS:
            record["mean_rank"] = None
    for vocabulary in document.get("vocabularies", []):
        if vocabulary.get("kind") in UNIGRAM_KINDS:
            for model in vocabulary.get("models", []):
                model.pop("sha256", None)
    return document


def csv_without_unigram_ids(text: str) -> str:
    """The same for the records' CSV (its `mean_rank` column)."""
    lines = text.splitlines()
    header = lines[0].split(",")
    kind, rank = header.index("kind"), header.index("mean_rank")
    kept = [lines[0]]
    for line in lines[1:]:
        fields = line.split(",")
        if fields[kind] in UNIGRAM_KINDS:
            fields[rank] = ""
        kept.append(",".join(fields))
    return "\n".join(kept) + "\n"


def stored(db_path: Path, run_id: int) -> dict:
    from sqlite_utils import Database

    db = Database(db_path)
    merges, counts = {}, {}
    for vocab_id, scope in db.execute("SELECT id, scope FROM vocabularies WHERE run_id = ? "
                                      "ORDER BY id", [run_id]).fetchall():
        merges[scope] = [[l, r, n, c, t.hex()] for l, r, n, c, t in db.execute(
            "SELECT left_id, right_id, new_id, count, token FROM merges WHERE vocab_id = ? "
            "ORDER BY rank", [vocab_id])]
        for size, lang, tokens, blob in db.execute(
                "SELECT size, lang, tokens, unit_tokens FROM token_counts WHERE vocab_id = ? "
                "ORDER BY size, lang", [vocab_id]):
            counts[f"{scope} {size} {lang}"] = [tokens, blob.hex()]
    return {"merges": merges, "counts": counts}


def make(app_args=RUNS) -> list[dict]:
    from analyzer.cli import app

    runner = CliRunner()
    results = []
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "golden.db"
        result = runner.invoke(app, ["ingest", str(SAMPLE), "--db", str(db)])
        assert result.exit_code == 0, result.output
        for run_id, args in enumerate(app_args, start=1):
            result = runner.invoke(app, ["run", *args, "--jobs", "1", "--no-report", "--db", str(db)])
            assert result.exit_code == 0, result.output
            show = json.loads(runner.invoke(app, ["show", str(run_id), "--json", "--db", str(db)]).stdout)
            export = json.loads(runner.invoke(app, ["export", str(run_id), "--db", str(db)]).stdout)
            results.append({"args": args, **stored(db, run_id), "show": without_clock(show),
                            "export": without_clock(export)})
    return results


EVERY_KIND_LANGUAGES = ["eng_Latn", "fra_Latn", "rus_Cyrl", "kor_Hang", "hin_Deva"]
EVERY_KIND_RUN = ["--vocab", "600,800", "--langs", ",".join(EVERY_KIND_LANGUAGES), "--parity",
                  "--superbpe", "700", "--algorithm", "bpe,unigram,wordpiece",
                  "--pretokenize", "words", "--extend", "cl100k_base", "--vocab", "+10,+30",
                  "--tokenizer", "cl100k_base"]
"""Every kind of vocabulary in one run (imported counts are added by `make_every_kind`)."""


def imported_counts(folder: Path) -> Path:
    """A counts file for the every-kind run: one more token than the unit has words."""
    rows = ["unit,lang,tokens"]
    for lang in EVERY_KIND_LANGUAGES:
        lines = (SAMPLE / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
        rows += [f"{unit},{lang},{len(line.split()) + 1}" for unit, line in enumerate(lines)]
    path = folder / "counts.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def make_every_kind() -> dict:
    """The every-kind run: its stored merges and counts, and what `show` (the tables, at 140
    columns, and --json), `export` (json, csv, --units), `merges` and `runs --json` print."""
    from analyzer.cli import app

    runner = CliRunner()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "golden.db"

        def output(*args: str) -> str:
            result = runner.invoke(app, [*args, "--db", str(db)], env={"COLUMNS": "140"})
            assert result.exit_code == 0, (args, result.output)
            return result.stdout

        output("ingest", str(SAMPLE))
        counts = imported_counts(Path(folder))
        output("run", *EVERY_KIND_RUN, "--counts", f"closed={counts}", "--jobs", "1", "--no-report")
        # with the files' folders (made <path>), as the export was written before issue 68
        export = json.loads(output("export", "1", "--full-paths"))
        merges = {f"{v['scope']} {v['pretokenizer']}": output("merges", "1", "--vocab", v["scope"],
                                                               "--pretokenizer", v["pretokenizer"])
                  for v in export["vocabularies"] if v["merges"]}
        return {"args": EVERY_KIND_RUN, **stored(db, 1),
                "show": without_unigram_ids(without_clock(json.loads(output("show", "1", "--json")))),
                "export": without_unigram_ids(without_paths(without_clock(export))),
                "export_csv": csv_without_unigram_ids(output("export", "1", "--format", "csv")),
                "export_units_csv": output("export", "1", "--format", "csv", "--units"),
                "export_units": without_clock(json.loads(output("export", "1", "--units")))["units"],
                "show_tables": output("show", "1"),
                "show_parity": output("show", "1", "--vocab", "parity"),
                "merges": merges,
                "merges_by_language": output("merges", "1", "--by-language", "--top", "5"),
                "runs": without_clock(json.loads(output("runs", "--json")))}


PRINTED = ("show_tables", "show_parity", "merges", "merges_by_language")
"""The every-kind golden's parts that are text printed for a reader, not numbers."""


def rewrite_presentation() -> None:
    golden = json.loads(gzip.decompress(EVERY_KIND.read_bytes()))
    fresh = make_every_kind()
    golden.update({part: fresh[part] for part in PRINTED})
    # the tables up to the production vocabularies' (test_golden's without_vocabularies_table)
    head = golden["show_tables"].partition("Production vocabularies")[0]
    golden["show_tables"] = head[:head.rfind("\n") + 1]
    EVERY_KIND.write_bytes(gzip.compress(json.dumps(golden, sort_keys=True).encode(), mtime=0))


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1]))
    if sys.argv[1:] == ["presentation"]:
        rewrite_presentation()
        print(f"wrote the printed parts of {EVERY_KIND}")
    elif sys.argv[1:] == ["every-kind"]:
        EVERY_KIND.write_bytes(gzip.compress(json.dumps(make_every_kind(), sort_keys=True).encode(),
                                             mtime=0))
        print(f"wrote {EVERY_KIND} ({EVERY_KIND.stat().st_size:,} bytes)")
    else:
        GOLDEN.write_bytes(gzip.compress(json.dumps(make(), sort_keys=True).encode(), mtime=0))
        print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size:,} bytes)")
