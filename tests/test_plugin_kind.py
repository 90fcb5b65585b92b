"""A kind of vocabulary is a plug-in (issue 53): a kind and its builder registered from here,
with no file of the package edited, go through a run end to end: `run`, `show`,
`show --json`, `export`, the report, and the service's run document.

The kind is an English-centric vocabulary, the common case the analyzer exists to measure:
BPE trained on the pivot alone and counted on every language. Its trainer is the BPE
builder's (`builders.bpe.build`): what is new here is only the kind and where it trains.
"""

from __future__ import annotations

import json
import types

import pytest

from analyzer.identity import Algorithm, KindAbout, KindSpec, VocabKind, VocabularyId
from helpers import cli_output, dump, invoke, page_data_of

SPEC = KindSpec("pivot-only", KindAbout("BPE of the pivot alone", "#aa3377", shown_first=True),
                Algorithm.BPE, word="pivot-only")


def plans(run):
    """Per pre-tokenizer: one vocabulary trained on the pivot, counting every language."""
    from analyzer.runs.builders.common import new_plan

    if not run.sizes:
        return []
    return [new_plan(run, VocabularyId(PIVOT_ONLY), [run.pivot], run.languages, pretokenizer)
            for pretokenizer in run.pretokenizers]


def check(settings, run, taken):
    """Nothing of its own to check; it takes its scope."""
    taken.add(VocabularyId(PIVOT_ONLY).scope)
    return {}, {}


PIVOT_ONLY: VocabKind


@pytest.fixture
def plugin():
    """The kind and its builder registered for one test, forgotten after it."""
    global PIVOT_ONLY
    from analyzer.runs import registry
    from analyzer.runs.builders import bpe

    PIVOT_ONLY = VocabKind.register(SPEC)
    builder = types.SimpleNamespace(KINDS=(PIVOT_ONLY,), plans=plans, build=bpe.build,
                                    check=check)
    registry.register(builder)
    try:
        yield PIVOT_ONLY
    finally:
        registry.unregister(builder)
        PIVOT_ONLY.unregister()


def test_a_kind_registered_by_a_plug_in_runs_end_to_end(plugin, db, tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from analyzer.serve import create_app

    assert plugin in set(VocabKind) and VocabKind("pivot-only") is plugin
    out = tmp_path / "reports"
    result = invoke(db, "run", "--vocab", "300,400", "--jobs", "1", "--out", out)
    assert result.exit_code == 0, result.output
    assert "pivot-only" in result.stdout

    shown = json.loads(cli_output(db, "show", "1", "--json"))
    records = [row for row in shown["records"] if row["vocab"] == "pivot-only"]
    assert {row["lang"] for row in records} == {"eng_Latn", "rus_Cyrl", "kor_Hang"}
    assert {row["kind"] for row in records} == {"pivot-only"}
    def tokens(vocab: str, lang: str) -> dict[int, int]:
        return {row["size"]: row["tokens"] for row in shown["records"]
                if row["vocab"] == vocab and row["lang"] == lang}

    # Trained on English alone, it is English's own vocabulary, counting every language.
    assert tokens("pivot-only", "eng_Latn") == tokens("eng_Latn", "eng_Latn")
    assert tokens("pivot-only", "kor_Hang")[400] > tokens("shared", "kor_Hang")[400]
    summary = [row for row in shown["summaries"] if row["vocab"] == "pivot-only"]
    assert summary, "a kind that counts every language is summarised"

    assert "pivot-only" in cli_output(db, "show", "1")

    exported = json.loads(cli_output(db, "export", "1"))
    vocabulary = next(v for v in exported["vocabularies"] if v["scope"] == "pivot-only")
    assert vocabulary["kind"] == "pivot-only" and vocabulary["merges"]
    assert "pivot-only" in cli_output(db, "export", "1", "--format", "csv")

    report = (out / "run-1.html").read_text(encoding="utf-8")
    assert "pivot-only" in report, "drawn in the report"

    with TestClient(create_app(db), base_url="http://127.0.0.1") as client:
        document = client.get("/api/runs/1").json()
        playground = client.get("/playground").text
    served = {row["vocab"] for row in document["records"]}
    assert "pivot-only" in served and {"shared"} <= served
    assert "pivot-only" in page_data_of(playground)["shownFirst"]

    # Where the plug-in is not installed, the run is refused with what is missing.
    from analyzer import identity

    monkeypatch.setattr(identity, "_PLUGINS_LOADED", [True])
    spec = identity._SPECS_BY_KIND.pop(plugin)
    del identity._KIND_BY_NAME["pivot-only"]
    try:
        refused = invoke(db, "show", "1")
    finally:
        identity._KIND_BY_NAME["pivot-only"], identity._SPECS_BY_KIND[plugin] = plugin, spec
    assert refused.exit_code != 0
    assert "a kind this analyzer does not know ('pivot-only')" in refused.output, refused.output
    assert "analyzer.kinds" in refused.output


def test_a_plug_in_kind_needs_a_scope_of_its_own(plugin):
    with pytest.raises(ValueError, match="already registered"):
        VocabKind.register(KindSpec("pivot-only", SPEC.about, Algorithm.BPE, word="other"))
    with pytest.raises(ValueError, match="another kind's"):
        VocabKind.register(KindSpec("twin", SPEC.about, Algorithm.BPE, word="pivot-only"))
    with pytest.raises(ValueError, match="holds none of"):
        KindSpec("bad", SPEC.about, Algorithm.BPE, word="a:b")
    with pytest.raises(ValueError, match="needs a word of its own"):  # it would write eng_Latn
        VocabKind.register(KindSpec("bare", SPEC.about, Algorithm.BPE, one_language=True))
    with pytest.raises(ValueError, match="another kind's"):  # unigram:hin_Deva is Unigram's
        VocabKind.register(KindSpec("named", SPEC.about, Algorithm.BPE, word="unigram", named=True))
    for name, color in (("My Kind", "#aa3377"), ("fine", "red")):
        with pytest.raises(ValueError, match="lower-case letters|not #rrggbb"):
            KindSpec(name, KindAbout("x", color, False), Algorithm.BPE, word="fine")
    assert VocabKind.register(SPEC) is plugin  # the same plug-in imported twice
    with pytest.raises(ValueError, match="built in"):
        VocabKind.SHARED.unregister()


def test_installed_plug_ins_are_loaded_from_their_entry_points(monkeypatch):
    """A package declares its kind under the entry point group `analyzer.kinds`: loaded with
    the builders, or when a kind is looked up by a name no kind has yet (a stored run, a Dask
    worker given a job)."""
    import importlib.metadata

    from analyzer import identity

    loaded, groups = [], []

    class Entry:
        def load(self):
            loaded.append(True)

    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group: groups.append(group) or [Entry()])
    monkeypatch.setattr(identity, "_PLUGINS_LOADED", [])
    assert identity.load_plugins() and not identity.load_plugins()  # once per process
    assert groups == ["analyzer.kinds"] and loaded == [True]
    monkeypatch.setattr(identity, "_PLUGINS_LOADED", [])
    with pytest.raises(ValueError, match="is not a kind of vocabulary"):
        VocabKind("nobody's")  # looked for among the plug-ins first
    assert loaded == [True, True]


def test_a_builder_is_checked_when_it_is_registered_and_a_kind_without_one_stops_a_run(db):
    from analyzer.runs import registry

    with pytest.raises(TypeError, match="needs KINDS"):
        registry.register(types.SimpleNamespace(plans=plans, build=lambda job, report: None))
    with pytest.raises(TypeError, match="or records"):
        registry.register(types.SimpleNamespace(KINDS=(VocabKind.SHARED,)))
    with pytest.raises(ValueError, match="not a registered builder"):
        registry.unregister(object())
    lonely = VocabKind.register(KindSpec("lonely", SPEC.about, Algorithm.BPE, word="lonely"))
    try:
        before = dump(db)
        result = invoke(db, "run", "--vocab", "300")
        assert result.exit_code != 0 and "no builder builds the kind lonely" in result.output
        assert dump(db) == before
    finally:
        lonely.unregister()


def test_a_broken_plug_in_is_said_and_leaves_the_analyzer_working(monkeypatch):
    import importlib.metadata
    import warnings

    from analyzer import identity

    class Broken:
        name, value = "broken", "broken_plugin.kind"

        def load(self):
            raise ModuleNotFoundError("No module named 'does_not_exist'")

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [Broken()])
    monkeypatch.setattr(identity, "_PLUGINS_LOADED", [])
    monkeypatch.setattr(identity, "PLUGIN_ERRORS", [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert identity.load_plugins()
    assert [str(w.message) for w in caught] == [
        "the plug-in broken (broken_plugin.kind) could not be loaded: ModuleNotFoundError: "
        "No module named 'does_not_exist'"]
    with pytest.raises(ValueError, match="the plug-in broken .* could not be loaded"):
        VocabKind("its-kind")
