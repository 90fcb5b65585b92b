"""The project's promises that can be checked mechanically: the README's commands, the
layering, the public API, and an install from a wheel."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_ci_runs_exactly_the_readme_test_command():
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    test_command = ci_lines[-1].strip()
    assert test_command.endswith("python -m pytest")
    assert f"    {test_command}\n" in README


def test_every_command_is_in_the_readme():
    from typer.main import get_command

    from analyzer.cli import app

    commands = sorted(get_command(app).commands)  # type: ignore[attr-defined]
    assert len(commands) >= 10
    missing = [name for name in commands if f"`analyzer {name}" not in README]
    assert missing == [], f"commands the README does not show: {missing}"


def imports_of(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_the_bpe_core_imports_only_the_standard_library_and_regex():
    for path in (ROOT / "analyzer" / "bpe").glob("*.py"):
        for name in imports_of(path):
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or top in ("__future__", "regex", "analyzer"), \
                f"{path.name}: {name}"
            if top == "analyzer":
                assert name.startswith("analyzer.bpe"), f"{path.name}: {name}"


LAYERS = ["bpe", "corpus", "store", "external", "runs", "metrics", "export", "report", "cli",
          "cli_views", "serve"]
"""Each layer may import only from the layers before it (DESIGN.md's order)."""


def test_layers_import_only_from_the_layers_above_them():
    for path in (ROOT / "analyzer").rglob("*.py"):
        relative = path.relative_to(ROOT / "analyzer")
        layer = relative.parts[0].removesuffix(".py")
        if layer not in LAYERS:
            continue
        for name in imports_of(path):
            parts = name.split(".")
            if parts[0] != "analyzer" or len(parts) < 2 or parts[1] not in LAYERS:
                continue
            assert LAYERS.index(parts[1]) <= LAYERS.index(layer), f"{relative} imports {name}"


SQL = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE TABLE)\b|\.execute\(")


def test_no_sql_outside_the_store():
    offenders = [str(path.relative_to(ROOT)) for path in (ROOT / "analyzer").rglob("*.py")
                 if "store" not in path.parts and SQL.search(path.read_text(encoding="utf-8"))]
    assert offenders == []


def test_the_public_api_is_the_declared_list_and_import_stays_light():
    code = ("import sys, analyzer; assert 'pandas' not in sys.modules and 'sqlite_utils' not in "
            "sys.modules; missing = [n for n in analyzer.__all__ if not hasattr(analyzer, n)]; "
            "assert not missing, missing; print(len(analyzer.__all__))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) <= 20
    assert (ROOT / "analyzer" / "py.typed").exists()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(folder), str(ROOT)], check=True, capture_output=True)
    return next(folder.glob("analyzer-*.whl"))


def test_the_wheel_carries_the_migrations_the_sample_and_the_type_marker(wheel):
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    for expected in ("analyzer/migrations/__init__.py", "analyzer/bpe/trainer.py", "analyzer/py.typed",
                     "analyzer/parallel_corpora/harbour_town/eng_Latn.txt",
                     "analyzer/parallel_corpora/harbour_town/README.md"):
        assert expected in names


def test_the_main_job_runs_from_an_installed_wheel(wheel, tmp_path):
    """The README's first command, from a wheel in a fresh venv, in a folder that is not the
    checkout. The venv borrows this interpreter's packages for the dependencies (so nothing is
    downloaded) but has its own analyzer, from the wheel."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    where = subprocess.run([str(python), "-c", "import analyzer; print(analyzer.__file__)"],
                           cwd=work, env=environment, capture_output=True, text=True, check=True)
    assert str(env_dir) in where.stdout, where.stdout  # the wheel's copy, not the checkout's
    analyzer = env_dir / "bin" / "analyzer"
    for command in (["ingest"], ["run", "--vocab", "256,512,1024", "--jobs", "1"]):
        done = subprocess.run([str(analyzer), *command], cwd=work, env=environment,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    assert (work / "analyzer.db").exists() and (work / "reports" / "run-1.html").exists()
