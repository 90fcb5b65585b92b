"""A kind of vocabulary is a plug-in (issues 53 and 70): an installed distribution declares it
under the entry point group `analyzer.kinds`, and with no file of the analyzer edited it goes
through a run end to end: `run`, `show`, `show --json`, `export`, the report (its DOM, in
Chromium), and the service's run document.

The plug-in is the how-to's (`docs/how-to/plugin/`), installed from its own pyproject.toml
into a folder of the test's: BPE trained on the pivot alone by a builder of its own, with a
section of its own (each language's premium beside the shared vocabulary's) and a view of it in
the terminal and in the report. The commands run in processes of their own, which find the
plug-in as an installed one is found: by its entry point, nothing patched (so every test here
but the how-to's is slow: pip installs the plug-in, and each command starts a process).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from analyzer.identity import Algorithm, KindAbout, KindSpec, VocabKind
from helpers import RunProcess, corpus_folder, dump, invoke, page_data_of

HOW_TO = Path(__file__).resolve().parents[1] / "docs" / "how-to"
PLUGIN = HOW_TO / "plugin"
"""The how-to's plug-in: its module (`pivot_only.py`) and its pyproject.toml."""
SECTION = "pivot_only_premiums"
TITLE = "Trained on the pivot alone"
"""Its section's name (`show --json`, `export`) and its chart's heading in the report."""
ABOUT = KindAbout("a test's kind", "#aa3377", False)


def install(source: Path, into: Path) -> Path:
    """`pip install` a distribution's folder into `into` (a folder to put on the path), as a
    user installs a plug-in: offline, from a copy (a build leaves files in its source)."""
    copy = into.parent / f"{source.name}-source"
    shutil.copytree(source, copy)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                    "--no-build-isolation", "--target", str(into), str(copy)],
                   check=True, capture_output=True)
    return into


def with_plugins(site: Path | None) -> dict:
    """The environment of a command run where the plug-ins of `site` are installed (None: where
    none is)."""
    paths = [str(site)] if site else []
    paths += [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    return {"PYTHONPATH": os.pathsep.join(paths)}


def analyzer(db: Path, *args, site: Path | None) -> str:
    """`python -m analyzer ARGS --db DB` in a process of its own; its standard output (it must
    succeed)."""
    code, out, err = RunProcess(*map(str, args), "--db", str(db), env=with_plugins(site)).finish()
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The how-to's plug-in, installed."""
    return install(PLUGIN, tmp_path_factory.mktemp("plugin") / "site")


@pytest.fixture(scope="module")
def ran(site, tmp_path_factory):
    """A database with the tiny corpus and one run (`run --vocab 300,400`) made where the
    plug-in is installed, and the folder its report was written to."""
    folder = tmp_path_factory.mktemp("ran")
    db = folder / "a.db"
    analyzer(db, "ingest", corpus_folder(folder / "tiny"), site=None)
    printed = analyzer(db, "run", "--vocab", "300,400", "--jobs", "1", "--out",
                       folder / "reports", site=site)
    return types.SimpleNamespace(db=db, reports=folder / "reports", printed=printed)


@pytest.fixture
def plugin(site, monkeypatch):
    """The plug-in loaded in this process as the analyzer loads one (its entry point found on
    the path, `identity.load_plugins`), and everything it registered forgotten after."""
    from analyzer import identity
    from analyzer.cli.views import TERMINAL_VIEWS
    from analyzer.metrics import SECTIONS
    from analyzer.report.page import REPORT_VIEWS
    from analyzer.runs import registry

    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(identity, "_PLUGINS_LOADED", [])
    monkeypatch.setattr(identity, "PLUGIN_ERRORS", [])
    assert identity.load_plugins() and identity.PLUGIN_ERRORS == []
    module = sys.modules["pivot_only"]
    try:
        yield module
    finally:
        registry.unregister(module)
        TERMINAL_VIEWS.unregister("pivot-only")
        REPORT_VIEWS.unregister("pivot-only")
        SECTIONS.unregister(SECTION)
        module.PIVOT_ONLY.unregister()
        del sys.modules["pivot_only"]


def test_the_how_to_shows_the_plug_in_the_test_installs():
    """The how-to's code blocks are the plug-in's files, as they are: what it shows runs."""
    page = (HOW_TO / "plugin-kind.md").read_text(encoding="utf-8")
    blocks = dict(re.findall(r"```\w+\n# (\S+)\n(.*?)```", page, flags=re.S))
    assert blocks == {name: (PLUGIN / name).read_text(encoding="utf-8")
                      for name in ("pivot_only.py", "pyproject.toml")}


@pytest.mark.slow
def test_an_installed_plug_in_runs_end_to_end(ran, site):
    shown = json.loads(analyzer(ran.db, "show", "1", "--json", site=site))

    def tokens(vocab: str, lang: str) -> dict[int, int]:
        return {row["size"]: row["tokens"] for row in shown["records"]
                if row["vocab"] == vocab and row["lang"] == lang}

    records = [row for row in shown["records"] if row["vocab"] == "pivot-only"]
    assert {row["lang"] for row in records} == {"eng_Latn", "rus_Cyrl", "kor_Hang"}
    assert {row["kind"] for row in records} == {"pivot-only"}
    # Trained on English alone by its own builder, it is English's own vocabulary (the BPE
    # builder's, trained on the same text), counting every language.
    assert tokens("pivot-only", "eng_Latn") == tokens("eng_Latn", "eng_Latn")
    assert tokens("pivot-only", "kor_Hang")[400] > tokens("shared", "kor_Hang")[400]
    assert [row for row in shown["summaries"] if row["vocab"] == "pivot-only"]

    # Its section: each language's premium under it and under the shared vocabulary, at 400.
    premium = {(row["vocab"], row["lang"]): row["premium"] for row in shown["records"]
               if row["size"] == 400}
    section = shown[SECTION]
    assert [(row["lang"], row["size"], row["pretokenizer"]) for row in section] == [
        (lang, 400, "none") for lang in ("eng_Latn", "kor_Hang", "rus_Cyrl")]
    for row in section:
        assert row["premium"] == premium["pivot-only", row["lang"]]
        assert row["shared_premium"] == premium["shared", row["lang"]]
        assert row["tokens_vs_shared"] == pytest.approx(
            tokens("pivot-only", row["lang"])[400] / tokens("shared", row["lang"])[400] - 1)
    assert section[1]["tokens_vs_shared"] > 1  # Korean, left out of its training: > twice

    # The terminal: its table right under the first one (`after="records"`), in `run` and `show`.
    printed = analyzer(ran.db, "show", "1", site=site)
    for output in (printed, ran.printed):
        tables = [line for line in output.splitlines() if line and not line[0].isspace()
                  and "─" not in line and ("Run 1" in line or line.startswith(("Trained on",
                                                                                 "Cost against")))]
        assert tables == ["Run 1 on tiny: tokens vs English, same text",
                          f"{TITLE}, at 400", "Cost against fairness: tokens of all languages "
                          "vs shared at 400"], output
        korean = next(line for line in output.splitlines() if line.startswith("none  ")
                      and "kor_Hang" in line)
        assert f"{section[1]['tokens_vs_shared']:+.1%}" in korean

    exported = json.loads(analyzer(ran.db, "export", "1", site=site))
    assert exported[SECTION] == section
    assert list(exported).index(SECTION) == list(exported).index("vocabulary_overlaps") + 1
    vocabulary = next(v for v in exported["vocabularies"] if v["scope"] == "pivot-only")
    assert vocabulary["kind"] == "pivot-only" and vocabulary["merges"]
    assert "pivot-only" in analyzer(ran.db, "export", "1", "--format", "csv", site=site)


@pytest.mark.slow
def test_its_report_view_draws_its_section(ran, site, browser):
    """The report, opened in Chromium: the section's heading, and its chart's bars holding each
    language's premiums (as extra tokens against the pivot) under the shared vocabulary and
    the plug-in's."""
    from test_report_browser import open_sections

    section = json.loads(analyzer(ran.db, "show", "1", "--json", site=site))[SECTION]
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto((ran.reports / "run-1.html").as_uri(), wait_until="load")
    page.wait_for_function("() => window.Plotly && document.querySelectorAll('.js-plotly-plot')"
                           ".length === document.querySelectorAll('.plotly-graph-div').length")
    open_sections(page)
    headings = page.locator("h2").all_text_contents()
    assert headings.count(TITLE) == 1
    assert headings.index(TITLE) == headings.index("How steady is the tax?") + 1  # at the end
    drawn = page.locator(f"section:has(h2:text-is('{TITLE}'))").locator(".js-plotly-plot")
    assert drawn.count() == 1
    traces = drawn.evaluate("div => div.data.map(t => ({name: t.name, x: Array.from(t.x), "
                            "y: Array.from(t.y)}))")
    names = ["English", "Korean", "Russian"]
    assert traces == [
        {"name": "shared", "x": names,
         "y": pytest.approx([(row["shared_premium"] - 1) * 100 for row in section])},
        {"name": "pivot-only", "x": names,
         "y": pytest.approx([(row["premium"] - 1) * 100 for row in section])}]
    assert drawn.locator("g.point").count() == 6  # the bars drawn, not only the data given
    assert drawn.locator(".gtitle").text_content() == "At size 400, pre-tokenizer none"
    page.close()
    assert problems == []


@pytest.mark.slow
def test_the_service_serves_its_section(ran, plugin):
    from fastapi.testclient import TestClient

    from analyzer.serve import create_app

    with TestClient(create_app(ran.db), base_url="http://127.0.0.1") as client:
        document = client.get("/api/runs/1").json()
        playground = client.get("/playground").text
    assert {"pivot-only", "shared"} <= {row["vocab"] for row in document["records"]}
    assert [row["lang"] for row in document[SECTION]] == ["eng_Latn", "kor_Hang", "rus_Cyrl"]
    assert "pivot-only" in page_data_of(playground)["shownFirst"]


@pytest.mark.slow
def test_where_the_plug_in_is_not_installed_its_runs_say_what_is_missing(ran):
    code, _, err = RunProcess("show", "1", "--db", str(ran.db), env=with_plugins(None)).finish()
    assert code != 0
    said = " ".join(err.split())
    assert "a kind this analyzer does not know ('pivot-only')" in said and "analyzer.kinds" in said
    # ... a run there builds none of it, and the index of the runs lists that one as unread.
    out = ran.reports.parent / "elsewhere"
    printed = analyzer(ran.db, "run", "--vocab", "300", "--jobs", "1", "--out", out, site=None)
    assert "pivot-only" not in printed and TITLE not in printed
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "run 1 holds vocabularies of a kind this analyzer does not know" in index


@pytest.mark.slow
def test_sections_and_views_register_in_order_and_once(plugin):
    from analyzer.cli.views import TERMINAL_VIEWS
    from analyzer.metrics import SECTIONS, Section, View
    from analyzer.report.page import REPORT_VIEWS

    assert VocabKind("pivot-only") is plugin.PIVOT_ONLY and SECTIONS[SECTION] is plugin.SECTION
    names = [view.name for view in TERMINAL_VIEWS]
    assert names[names.index("records") + 1] == "pivot-only"  # after="records", as it asked
    assert [view.name for view in REPORT_VIEWS][-2:] == ["languages", "pivot-only"]
    assert [section.name for section in SECTIONS][-1] == SECTION
    with pytest.raises(ValueError, match="a section named 'pivot_only_premiums' is already"):
        SECTIONS.register(Section(SECTION, lambda run: True, lambda results: []))
    with pytest.raises(ValueError, match="a report view named 'pivot-only' is already"):
        REPORT_VIEWS.register(View("pivot-only", "records", plugin.report_view))
    with pytest.raises(ValueError, match="shows the section 'nowhere', which is not registered"):
        TERMINAL_VIEWS.register(View("lost", "nowhere", plugin.terminal_view))
    with pytest.raises(KeyError, match="no terminal view named 'nowhere' is registered"):
        TERMINAL_VIEWS.register(View("lost", SECTION, plugin.terminal_view), before="nowhere")
    with pytest.raises(ValueError, match="not both"):
        TERMINAL_VIEWS.register(View("lost", SECTION, plugin.terminal_view), after="records",
                                before="records")
    early = TERMINAL_VIEWS.register(View("early", SECTION, plugin.terminal_view), before="records")
    try:
        names = [view.name for view in TERMINAL_VIEWS]
        at = names.index("early")
        assert names[at:at + 3] == ["early", "records", "pivot-only"]
    finally:
        assert TERMINAL_VIEWS.unregister("early") is early
    assert "early" not in TERMINAL_VIEWS


@pytest.mark.slow
def test_the_plug_in_is_loaded_once_per_process_and_needs_a_scope_of_its_own(plugin):
    from analyzer import identity

    assert not identity.load_plugins()  # once per process
    spec = plugin.PIVOT_ONLY.spec
    assert VocabKind.register(spec) is plugin.PIVOT_ONLY  # the same plug-in imported twice
    with pytest.raises(ValueError, match="already registered"):
        VocabKind.register(KindSpec("pivot-only", ABOUT, Algorithm.BPE, word="other"))
    with pytest.raises(ValueError, match="another kind's"):
        VocabKind.register(KindSpec("twin", ABOUT, Algorithm.BPE, word="pivot-only"))
    with pytest.raises(ValueError, match="holds none of"):
        KindSpec("bad", ABOUT, Algorithm.BPE, word="a:b")
    with pytest.raises(ValueError, match="needs a word of its own"):  # it would write eng_Latn
        VocabKind.register(KindSpec("bare", ABOUT, Algorithm.BPE, one_language=True))
    with pytest.raises(ValueError, match="another kind's"):  # unigram:hin_Deva is Unigram's
        VocabKind.register(KindSpec("named", ABOUT, Algorithm.BPE, word="unigram", named=True))
    for name, color in (("My Kind", "#aa3377"), ("fine", "red")):
        with pytest.raises(ValueError, match="lower-case letters|not #rrggbb"):
            KindSpec(name, KindAbout("x", color, False), Algorithm.BPE, word="fine")
    with pytest.raises(ValueError, match="built in"):
        VocabKind.SHARED.unregister()


def test_a_builder_is_checked_when_it_is_registered_and_a_kind_without_one_stops_a_run(db):
    from analyzer.runs import registry

    with pytest.raises(TypeError, match="needs KINDS"):
        registry.register(types.SimpleNamespace(plans=lambda run: [],
                                                build=lambda job, report: None))
    with pytest.raises(TypeError, match="or records"):
        registry.register(types.SimpleNamespace(KINDS=(VocabKind.SHARED,)))
    with pytest.raises(ValueError, match="not a registered builder"):
        registry.unregister(object())
    lonely = VocabKind.register(KindSpec("lonely", ABOUT, Algorithm.BPE, word="lonely"))
    try:
        before = dump(db)
        result = invoke(db, "run", "--vocab", "300")
        assert result.exit_code != 0 and "no builder builds the kind lonely" in result.output
        assert dump(db) == before
    finally:
        lonely.unregister()


@pytest.mark.slow
def test_a_broken_plug_in_is_said_and_leaves_the_analyzer_working(tmp_path, monkeypatch):
    """A distribution whose module cannot be imported, installed as the working one is."""
    import warnings

    from analyzer import identity

    source = tmp_path / "broken"
    source.mkdir()
    (source / "pyproject.toml").write_text(
        (PLUGIN / "pyproject.toml").read_text(encoding="utf-8")
        .replace("analyzer-pivot-only", "analyzer-broken").replace("pivot_only", "broken_plugin")
        .replace("pivot-only =", "broken ="), encoding="utf-8")
    (source / "broken_plugin.py").write_text("import does_not_exist\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(install(source, tmp_path / "site")))
    importlib.invalidate_caches()
    monkeypatch.setattr(identity, "_PLUGINS_LOADED", [])
    monkeypatch.setattr(identity, "PLUGIN_ERRORS", [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert identity.load_plugins()
    assert [str(w.message) for w in caught] == [
        "the plug-in broken (broken_plugin) could not be loaded: ModuleNotFoundError: "
        "No module named 'does_not_exist'"]
    with pytest.raises(ValueError, match=r"the plug-in broken \(broken_plugin\) could not be"):
        VocabKind("its-kind")
