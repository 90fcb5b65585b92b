"""Which engine runs: the compiled one when built, the pure one when asked or when the compiled
one is missing (with one line on stderr), and the choice is visible."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from analyzer import bpe

MISSING_EXTENSION = "import sys; sys.modules['analyzer.bpe._engine'] = None; "


def python(code: str, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "ANALYZER_ENGINE"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**environment, **env})


def test_the_compiled_engine_is_built_wherever_there_is_a_compiler():
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here: the pure engine is the one that runs")
    assert "compiled" in bpe.ENGINES, "pip install -e . should have built analyzer/bpe/engine/"


def test_without_the_extension_the_pure_engine_runs_and_says_so_once():
    done = python(MISSING_EXTENSION + "from analyzer import bpe; import analyzer.bpe; "
                  "print(bpe.ENGINE, sorted(bpe.ENGINES)); print(bpe.train('abab abab', 258))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["python ['python']", "[((97, 98), 256), ((256, 256), 257)]"]
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "compiled BPE engine is not built" in lines[0]


@pytest.mark.slow
def test_the_version_names_the_engine():
    done = python(MISSING_EXTENSION + "from analyzer.cli import main; sys.argv = ['analyzer', "
                  "'--version']; main()")
    assert "python BPE engine" in done.stdout
    done = python("from analyzer.cli import main; import sys; sys.argv = ['analyzer', '--version']; "
                  "main()", ANALYZER_ENGINE="python")
    assert "python BPE engine" in done.stdout and done.stderr == ""
    if "compiled" in bpe.ENGINES:
        done = python("from analyzer.cli import main; import sys; sys.argv = ['analyzer', "
                      "'--version']; main()")
        assert "compiled BPE engine" in done.stdout


def test_asking_for_a_missing_compiled_engine_is_an_error_and_nonsense_is_ignored():
    done = python(MISSING_EXTENSION + "import analyzer.bpe", ANALYZER_ENGINE="compiled")
    assert done.returncode != 0 and "ANALYZER_ENGINE=compiled, but the compiled engine is not built" \
        in done.stderr
    done = python("from analyzer import bpe; print(bpe.ENGINE)", ANALYZER_ENGINE="fast")
    assert done.returncode == 0 and "'fast' is neither compiled nor python" in done.stderr


def test_a_run_records_its_engine(tiny_db):
    from analyzer.runs import RunSettings, execute_run
    from analyzer.store import get_run

    run_id = execute_run(tiny_db, RunSettings(sizes=[300], jobs=1))
    assert get_run(tiny_db, run_id).engine_version.endswith(f"{bpe.ENGINE} engine")


@pytest.mark.parametrize("arrays, message", [
    (dict(groups=[0]), "groups and starts differ in length"),
    (dict(groups=[0, 1], multiplicities=[1]), "multiplicities and starts differ in length"),
    (dict(groups=[0, 1], weights=[1, 1, 1]), "weights and starts differ in length"),
    (dict(parity=True), "parity-aware training needs groups"),
])
def test_the_extension_refuses_arrays_that_do_not_match_the_texts(arrays, message):
    """The extension's own checks (the Python layer checks first; this is the layer below)."""
    from array import array

    if "compiled" not in bpe.ENGINES:
        pytest.skip("the compiled engine is not built here")
    from analyzer.bpe import _engine
    from analyzer.bpe.packing import pack

    packed = pack(["abab", "cdcd"])
    as_int64 = {key: array("q", value) if isinstance(value, list) else value
                for key, value in arrays.items()}
    weights = as_int64.pop("weights", None)
    with pytest.raises(ValueError, match=message):
        _engine.train(packed.buffer, array("q", packed.starts), weights, 260, 2, False, None, 1,
                      **as_int64)
