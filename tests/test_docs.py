"""The docs as a deliverable: the README fits a screen or two and its links lead somewhere; the
site builds with warnings as errors (no broken link or reference) and works offline in a real
browser; the committed command reference is the one the application generates; and the
tutorial's commands run, printing what the page shows."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import cli_output

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def tool(name: str):
    """A script of tools/ as a module (they are not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_fits_and_its_links_resolve():
    assert len(README.splitlines()) <= 150
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if "://" not in target:
            assert (ROOT / target).exists(), target


def test_the_generated_reference_pages_are_current():
    assert tool("reference").stale() == [], "stale reference pages: python tools/reference.py"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(out)], cwd=ROOT, capture_output=True, text=True,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return out


def test_the_site_builds_strictly_with_every_page(site):
    for page in ("index.html", "reference/cli.html", "how-to/published-numbers.html",
                 "results.html", "results/flores200-devtest/index.html"):
        assert (site / page).is_file(), page


@pytest.mark.slow
def test_the_site_works_offline_in_a_browser(site, browser):
    page = browser.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("request", lambda r: problems.append(f"request: {r.url}")
            if not r.url.startswith(("file:", "data:", "blob:", "about:")) else None)
    for path in ("index.html", "tutorials/flores.html", "reference/cli.html"):
        page.goto((site / path).as_uri(), wait_until="load")
        assert page.locator("h1").count() >= 1
    page.close()
    assert problems == []


def indented_commands(markdown: str) -> list[str]:
    """The `analyzer ...` commands of a page's indented code blocks, in order (a trailing
    comment and an output redirection dropped), skipping a block after a `<!-- needs: ... -->`
    mark (what a test cannot have: the network, a cluster, a token, a corpus not shipped), and
    every block after an `<!-- own test: ... -->` mark (a page whose commands a test of its own
    runs in order, on a corpus of their own)."""
    commands, skip = [], False
    for block in re.split(r"\n\n", markdown):
        if block.startswith("<!-- own test:"):
            break
        if block.startswith("<!-- needs:"):
            skip = True
            continue
        if block.startswith("    "):
            if not skip:
                for line in block.splitlines():
                    for part in line.strip().split(" && "):
                        part = part.split("  #")[0].split(" > ")[0].strip()
                        if part.startswith("analyzer "):
                            commands.append(part)
            skip = False
    return commands


@pytest.mark.slow
def test_every_example_is_run_or_marked(tmp_path, monkeypatch):
    """Every unmarked example of the README and the docs runs, in a folder with the shipped
    sample ingested and run (as the README's first command leaves it)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    examples = list(dict.fromkeys(command for page in pages if page.name != "cli.md"
                                  for command in indented_commands(page.read_text("utf-8"))))
    assert examples[:2] == ["analyzer ingest", "analyzer run --vocab 256,512,1024"]
    assert len(examples) >= 8
    serving = [command for command in examples if command.startswith("analyzer serve")]
    assert not serving, f"a server runs until stopped: mark its example with <!-- needs: -->: {serving}"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "parallel_corpora").symlink_to(ROOT / "parallel_corpora")  # as in a clone
    db = tmp_path / "analyzer.db"
    for command in examples:
        args = [part.strip('"') for part in re.findall(r'"[^"]*"|\S+', command)[1:]]
        cli_output(db, *args)  # exit 0, or it says which


@pytest.mark.slow
def test_the_sample_tutorial_runs_and_prints_what_it_shows(tmp_path, monkeypatch):
    page = (ROOT / "docs" / "tutorials" / "sample-corpus.md").read_text(encoding="utf-8")
    commands = indented_commands(page)
    assert commands[:2] == ["analyzer ingest", "analyzer run --vocab 256,512,1024"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")  # the page shows the table as a wide terminal prints it
    db = tmp_path / "analyzer.db"
    outputs = {}
    for command in commands:
        args = [part.strip('"') for part in re.findall(r'"[^"]*"|\S+', command)[1:]]
        outputs[command] = cli_output(db, *args)
    printed = outputs["analyzer run --vocab 256,512,1024"]
    shown = re.search(r"```text\n(.*?)```", page, re.S).group(1)  # type: ignore[union-attr]
    for line in shown.splitlines()[1:]:  # each language's row: its numbers, as printed
        lang = line.split()[0]
        row = next(printed_line for printed_line in printed.splitlines()
                   if printed_line.strip().startswith(lang))
        assert re.findall(r"[\d,]+|\([+-]\d+%\)", line) == re.findall(r"[\d,]+|\([+-]\d+%\)", row)
    assert (tmp_path / "reports" / "run-1.html").is_file()


def test_examples_that_need_the_network_are_marked():
    flores = (ROOT / "docs" / "tutorials" / "flores.md").read_text(encoding="utf-8")
    assert "hf:openlanguagedata/flores_plus" not in " ".join(indented_commands(flores))
    assert "hf:openlanguagedata/flores_plus" in flores  # it is there, marked


def documented_commands() -> list[tuple[str, str]]:
    """(page, command line) of every `analyzer ...` line in the README's and the docs' code
    blocks (indented or fenced), a trailing comment dropped."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        if path.name == "cli.md":  # generated from the application itself
            continue
        text = path.read_text(encoding="utf-8")
        blocks = re.findall(r"```(?:console|bash|sh|shell)?\n(.*?)```", text, re.S)
        blocks += [line for line in text.splitlines() if line.startswith("    ")]
        blocks += re.findall(r"`(analyzer [^`]+)`", text)  # in the prose and the tables
        for block in blocks:
            for line in block.splitlines():
                line = line.strip().removeprefix("$ ")
                for part in line.split(" && "):
                    if part.startswith("analyzer "):
                        found.append((str(path.relative_to(ROOT)), part.split("  #")[0].strip()))
    return found


def test_every_documented_command_and_option_exists():
    """The docs cannot drift from the program: every command and every --option an example
    uses is one the application has."""
    import shlex

    from typer.main import get_command

    from analyzer.cli import app

    group = get_command(app)
    wrong = []
    examples = documented_commands()
    assert len(examples) >= 100
    for page, line in examples:
        try:
            words = shlex.split(line)[1:]
        except ValueError:
            words = line.split()[1:]
        command = group
        while words and hasattr(command, "commands") and words[0] in command.commands:
            command = command.commands[words.pop(0)]
        if command is group:
            if words and not words[0].startswith("-"):
                wrong.append(f"{page}: {line}: no command {words[0]!r}")
            continue
        options = {name for param in command.params for name in (*param.opts, *param.secondary_opts)}
        for word in words:
            flag = word.split("=")[0].strip("[]|.,;)")
            if flag.startswith("-") and flag not in options and flag != "--help":
                wrong.append(f"{page}: {line}: no option {flag}")
    assert wrong == []


SCREENSHOT = ROOT / "docs" / "report.png"
SHOWN = SCREENSHOT.with_suffix(".png.txt")
"""The README's screenshot of the sample run's report, and the words at the top of the page it
shows (its title and lead sentences), written together by the test below."""


@pytest.mark.slow
def test_the_readme_screenshot_is_the_page_as_it_is(browser, tmp_path, monkeypatch):
    """The screenshot is made by this test from the real page of the README's first command's
    run; the test fails when the page's top no longer says what the screenshot shows. Make it
    anew with `ANALYZER_WRITE_SCREENSHOTS=1 python -m pytest tests/test_docs.py -k screenshot`."""
    import os

    monkeypatch.chdir(tmp_path)
    db = tmp_path / "analyzer.db"
    cli_output(db, "ingest")
    cli_output(db, "run", "--vocab", "256,512,1024")
    page = browser.new_page(viewport={"width": 1200, "height": 1020})
    page.goto((tmp_path / "reports" / "run-1.html").as_uri(), wait_until="load")
    shown = "\n".join([page.locator("h1").inner_text(),
                       *page.locator("p.lead").all_inner_texts()]) + "\n"
    if os.environ.get("ANALYZER_WRITE_SCREENSHOTS"):
        page.screenshot(path=str(SCREENSHOT))
        SHOWN.write_text(shown, encoding="utf-8")
    page.close()
    assert "](docs/report.png)" in README
    assert SHOWN.read_text(encoding="utf-8") == shown, (
        "the report's top changed: make the README's screenshot anew (see this test's docstring)")


def same_lines(shown: str, printed: str) -> list[str]:
    """The lines of a page's output block that the command did not print, in order (spaces
    collapsed: a table's padding is not what a reader checks)."""
    def collapsed(text: str) -> list[str]:
        return [" ".join(line.split()) for line in text.splitlines() if line.strip()
                and not set(line.strip()) <= {"─"}]

    printed_lines, at, missing = collapsed(printed), 0, []
    for line in collapsed(shown):
        found = next((i for i in range(at, len(printed_lines))
                      if printed_lines[i] == line or printed_lines[i].startswith(line)), None)
        if found is None:
            missing.append(line)
        else:
            at = found + 1
    return missing


@pytest.mark.slow
def test_the_engineer_s_tutorial_runs_and_prints_what_it_shows(tmp_path, monkeypatch):
    """Issue 71: the engineer's path, from a folder of languages to the verdict and the bill,
    every command run and every output block printed as the page shows it."""
    from helpers import resolve_or_skip

    for name in ("o200k_base", "cl100k_base", "llama3", "gpt2"):
        resolve_or_skip(name)
    page = (ROOT / "docs" / "tutorials" / "my-languages.md").read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")  # as the page's outputs were printed
    (tmp_path / "parallel_corpora").symlink_to(ROOT / "parallel_corpora")
    db = tmp_path / "analyzer.db"
    # each command's block, then the output blocks up to the next command
    pieces = re.split(r"\n\n((?:    analyzer [^\n]+\n)+)", page)
    checked = 0
    for commands, after in zip(pieces[1::2], pieces[2::2]):
        command = commands.strip().splitlines()[-1].strip()
        args = [part.strip('"') for part in re.findall(r'"[^"]*"|\S+', command)[1:]]
        printed = cli_output(db, *args)
        for shown in re.findall(r"```text\n(.*?)```", after.split("\n    analyzer ")[0], re.S):
            assert same_lines(shown, printed) == [], f"{command} printed:\n{printed}"
            checked += 1
    assert checked >= 6 and (tmp_path / "reports" / "run-1.html").is_file()
