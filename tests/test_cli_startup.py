"""A command pays for the libraries it uses and no more (issue 69): `analyzer --help` and
`run --help` load no database code, pandas, NumPy or Plotly (they took 2 s of imports); a
run without a report, or an export, loads no Plotly; nothing loads a tokenizer library, Dask
or the service that it does not use. Counted by the modules a fresh process has loaded."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # fresh processes, a second each on two busy cores

HEAVY = ("pandas", "numpy", "pyarrow", "sqlalchemy", "sqlmodel", "sqlite_utils", "plotly",
         "narwhals", "tokenizers", "tiktoken", "sentencepiece", "distributed", "fastapi",
         "uvicorn")
"""Libraries that take tens to hundreds of milliseconds to import."""

LOADED = f"""
import json, sys
sys.argv = ["analyzer", *sys.argv[1:]]
import analyzer.cli
try:
    analyzer.cli.main()
except SystemExit as done:
    assert not done.code, done.code
print(json.dumps(sorted(name for name in {HEAVY!r} if name in sys.modules)))
"""


def loaded(*args: str) -> set[str]:
    """The heavy libraries `analyzer ARGS` loaded, run in a fresh process."""
    done = subprocess.run([sys.executable, "-c", LOADED, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["report", "--help"],
                                  ["export", "--help"], ["serve", "--help"],
                                  ["sources", "add", "--help"], ["train", "--help"],
                                  ["--version"]])
def test_help_loads_none_of_the_libraries(args):
    assert loaded(*args) == set()


def test_the_catalog_loads_no_database_and_no_tokenizer_library():
    assert loaded("tokenizers", "--json") == set()


def test_a_run_without_a_report_loads_no_plotly_and_an_export_none(tiny_db_path, tmp_path):
    run = loaded("run", "--db", str(tiny_db_path), "--vocab", "300", "--no-report")
    assert {"sqlite_utils", "pandas"} <= run  # what it stores and shows with
    assert run.isdisjoint({"plotly", "narwhals", "tokenizers", "tiktoken", "sentencepiece",
                           "distributed", "fastapi", "uvicorn"})
    export = loaded("export", "1", "--db", str(tiny_db_path), "--out", str(tmp_path / "run.json"))
    assert export.isdisjoint({"plotly", "narwhals", "tokenizers", "tiktoken", "distributed",
                              "fastapi"})
    assert "plotly" in loaded("report", "1", "--db", str(tiny_db_path), "--out",
                              str(tmp_path / "reports"))


def test_commands_that_show_no_metrics_load_no_pandas(tiny_db_path):
    # sqlite-utils imports pandas when it is installed (for one column type the store never
    # writes); the store imports it with pandas hidden: 0.4 s of `corpora`, `runs`, `ingest`
    for args in (["corpora"], ["runs"]):
        found = loaded(*args, "--db", str(tiny_db_path))
        assert "sqlite_utils" in found and "pandas" not in found, (args, found)


def test_pandas_is_refused_only_to_the_thread_importing_sqlite_utils():
    # hiding pandas in sys.modules would fail another thread's `import pandas` meanwhile
    import threading

    from analyzer.store.sqlite import _PandasRefused

    refused = _PandasRefused()
    with pytest.raises(ModuleNotFoundError):
        refused.find_spec("pandas")
    assert refused.find_spec("numpy") is None
    elsewhere: list[object] = []
    thread = threading.Thread(target=lambda: elsewhere.append(refused.find_spec("pandas")))
    thread.start()
    thread.join()
    assert elsewhere == [None]  # another thread: left to the other finders
    refused.thread = None  # done: idle
    assert refused.find_spec("pandas") is None
