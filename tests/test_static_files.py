"""The pages' scripts and styles are files a maintainer edits as JavaScript and CSS (the
reports' in analyzer/report/static, inlined into each page; the service's in
analyzer/serve/static, served from /static with the reports'): every file the code names is
there and packaged, none lies unused, and no module of the pages keeps a script or a style in a
Python string."""

from __future__ import annotations

import ast
import re
import tomllib
from fnmatch import fnmatch
from importlib.resources import files
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("analyzer.report", "analyzer.serve")
"""The packages whose pages have scripts and styles, each in its folder static/."""
PAGE_MODULES = sorted(path for package in PACKAGES
                      for path in (ROOT / package.replace(".", "/")).glob("*.py"))
NAMED = re.compile(r"""['"/]([\w-]+\.(?:js|css))['"]""")
"""A static file as the code names it: 'tables.js', "/static/common.js"."""

SCRIPT = re.compile(r"\bfunction\s*\(|\bvar\s+\w+\s*=|addEventListener\(|getElementById\(")
STYLE = re.compile(r"[\w\])*]\s*\{\s*[-\w]+\s*:[^{};]*;")
"""What reads as a script's statement or a style's rule (a selector, then a declaration)."""


def shipped() -> dict[str, set[str]]:
    """The files of each package's static/, as the installed package reads them."""
    return {package: {item.name for item in (files(package) / "static").iterdir() if item.is_file()}
            for package in PACKAGES}


def code_in(text: str) -> bool:
    """Whether a Python string holds a script or a style."""
    return bool(SCRIPT.search(text) or STYLE.search(text))


def test_every_static_file_the_pages_name_is_shipped_and_every_one_shipped_is_named():
    found = shipped()
    report, serve = found["analyzer.report"], found["analyzer.serve"]
    assert report and serve
    assert report & serve == set(), "the service serves both folders under one set of names"
    named = {name for path in PAGE_MODULES
             for name in NAMED.findall(path.read_text(encoding="utf-8"))}
    assert named - (report | serve) == set(), "named, but no such file"
    assert (report | serve) - named == set(), "a file no page uses"
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for package, names in found.items():
        left_out = [name for name in names
                    if not any(fnmatch(f"static/{name}", glob) for glob in data.get(package, []))]
        assert left_out == [], f"{package}'s package data leaves out {left_out}"


@pytest.mark.parametrize(("text", "code"), [
    (".answer td.dark { color: #fff; }", True),
    ("body{font-family:system-ui,sans-serif;max-width:28rem}", True),
    ("(function () {\n  var bar = document.getElementById('toolbar');", True),
    ("th.addEventListener('click', go);", True),
    ("<td style='background:", False),
    ("<script type='application/json' id='page-data'>", False),
    ("What the field's words mean, in plain words: {glossary}", False),
])
def test_the_check_tells_code_from_markup(text, code):
    assert code_in(text) is code


def test_no_page_module_keeps_a_script_or_a_style_in_a_string():
    """(Docstrings aside: they name `function(db)` and the like.)"""
    found = []
    for path in PAGE_MODULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        said = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in said and code_in(node.value)):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:60]!r}")
    assert found == [], "scripts and styles go in static/ files:\n" + "\n".join(found)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_static_file_can_close_the_element_it_is_inlined_in(package):
    """A report inlines its files in <script> and <style>: none may end the element early, or
    open a comment that changes where the browser ends it."""
    folder = files(package) / "static"
    for name in sorted(shipped()[package]):
        text = (folder / name).read_text(encoding="utf-8").lower()
        assert not any(tag in text for tag in ("</script", "</style", "<script", "<!--")), name
