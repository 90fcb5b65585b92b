"""Output that does not depend on the terminal: no command breaks a path, a URL or a name
across lines, whatever the width (COLUMNS unset: rich's 80 columns in a pipe; narrow; wide),
and no test depends on it either (issue 50, items 1 and 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import TINY, invoke, resolve_or_skip

WIDTHS = [None, "40", "200"]
"""COLUMNS: unset (as on a fresh machine, and in a pipe), narrow, wide."""


def whole(path, output: str) -> bool:
    """Whether `path` appears whole on one line of `output`."""
    return any(str(path) in line for line in output.splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_printed_paths_stay_whole_at_any_width(tmp_path, columns):
    resolve_or_skip("cl100k_base")
    deep = tmp_path / ("a-folder-with-a-long-name-" * 6)  # 156 characters, then the files
    corpus = deep / "tiny"
    corpus.mkdir(parents=True)
    for lang, lines in TINY.items():
        (corpus / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = deep / "a.db"
    env = {"COLUMNS": columns, "LINES": None}

    def output(*args: object) -> str:
        result = invoke(db, *args, env=env)
        assert result.exit_code == 0, result.output
        return result.output  # standard output and standard error

    printed = output("ingest", corpus)
    assert whole(corpus, printed) and whole(db, printed), printed
    assert whole(corpus, output("corpora")) and whole(corpus, output("corpus", "tiny"))
    printed = output("run", "--vocab", "300", "--jobs", "1", "--tokenizer", "cl100k_base",
                     "--out", deep / "reports")
    assert whole(deep / "reports" / "run-1.html", printed), printed
    printed = output("report", "1", "--out", deep / "again")
    assert whole(deep / "again" / "run-1.html", printed), printed
    printed = output("results", "1", "--out", deep / "results")
    for name in ("results.json", "index.html", "report.html"):
        assert whole(deep / "results" / name, printed), printed
    printed = output("export", "1", "--out", deep / "records.json")
    assert whole(deep / "records.json", printed), printed
    printed = output("sources", "add", "wiki", corpus / "eng_Latn.txt", corpus / "rus_Cyrl.txt")
    printed += output("sources", "show", "wiki")
    assert whole(deep, printed), printed
    missing = invoke(db, "ingest", deep / "not-there", env=env)
    assert missing.exit_code == 1 and whole(deep / "not-there", missing.output), missing.output


def test_ci_runs_the_tests_with_no_terminal_size_nor_locale_of_the_developers():
    """The developer's wide terminal or locale cannot hide a test that depends on them."""
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    before_tests = ci[:ci.rindex("python -m pytest")]
    assert "unset COLUMNS LINES TERM" in before_tests
    assert "export LC_ALL=C.UTF-8" in before_tests and "CI_COLUMNS" in before_tests
