"""Write the golden results that tests/test_golden.py compares every later version against.

Run once, on the version whose results are the contract (it was run at commit 27aa7be, the
end of the first vertical slice, before any engine or layout change):

    python tests/golden/make_golden.py

Two runs on the shipped sample corpus: every stored merge and count, and the documented JSON
(`show --json`, `export`) with the fields that depend on the clock removed.
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from pathlib import Path

from typer.testing import CliRunner

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parents[1] / "parallel_corpora" / "harbour_town"
GOLDEN = HERE / "harbour_town.json.gz"

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


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1]))
    GOLDEN.write_bytes(gzip.compress(json.dumps(make(), sort_keys=True).encode(), mtime=0))
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size:,} bytes)")
