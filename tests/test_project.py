"""The README's promises that can be checked mechanically."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    test_command = ci_lines[-1].strip()
    assert test_command.endswith("python -m pytest")
    assert f"    {test_command}\n" in readme


def test_the_bpe_core_imports_nothing_outside_the_standard_library():
    import ast
    import sys

    for path in (ROOT / "analyzer" / "bpe").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top == "__future__", f"{path.name}: {name}"
