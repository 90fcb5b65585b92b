"""The training algorithm through the command line: `run --algorithm`, what `show`, `tokenize`,
`merges` and `export` say of Unigram and WordPiece vocabularies, the stored model exported and
loaded by its library with exactly the run's counts, and bad settings refused with the flag's
name and nothing stored."""

from __future__ import annotations

import hashlib
import json

import pytest

from analyzer.metrics import load_run_data
from analyzer.store import open_db
from helpers import TINY, cli_output, dump, invoke

tokenizers = pytest.importorskip("tokenizers", reason="needs pip install -e '.[tokenizers]'")

RUN = ("run", "--vocab", "520,600", "--algorithm", "unigram", "--algorithm", "wordpiece",
       "--pretokenize", "words", "--no-report")


@pytest.fixture
def algorithm_db(db):
    result = invoke(db, *RUN)
    assert result.exit_code == 0, result.output
    return db, result.output


def test_a_run_shows_each_language_under_each_algorithm(algorithm_db):
    db, output = algorithm_db
    assert "size 520 (its own training)" in output  # the progress says each size trains alone
    assert "Premium vs eng_Latn by algorithm, pre-tokenizer words" in output
    assert "Tokens against BPE's, per script" in output and "Hangul" in output
    assert "Cost against fairness" in output
    listing = json.loads(cli_output(db, "runs", "--json"))[0]
    assert listing["algorithms"] == ["bpe", "unigram", "wordpiece"]
    shown = json.loads(cli_output(db, "show", "1", "--json"))
    rows = [r for r in shown["summaries"] if r["vocab"] == "unigram"]
    assert {r["algorithm"] for r in rows} == {"unigram"} and {r["size"] for r in rows} == {520, 600}
    assert {r["algorithm"] for r in shown["algorithm_premiums"]} == {"bpe", "unigram", "wordpiece"}


def test_tokenize_uses_the_stored_model_and_names_the_sizes_it_has(algorithm_db):
    db, _ = algorithm_db
    text = TINY["kor_Hang"][0]
    result = invoke(db, "tokenize", "1", text, "--vocab", "wordpiece", "--size", "520")
    assert result.exit_code == 0, result.output
    assert "(wordpiece vocabulary, size 520)" in result.output
    data = load_run_data(open_db(db), 1)
    tokens = int(data.counts[("wordpiece", "words", 520)]["kor_Hang"][0])
    assert f"{tokens} tokens for {len(text.encode())} bytes" in result.output
    result = invoke(db, "tokenize", "1", text, "--vocab", "unigram", "--size", "555")
    assert result.exit_code == 1
    assert "unigram in run 1 was trained at sizes 520, 600, not 555" in result.output


def test_merges_of_a_unigram_vocabulary_says_what_it_has_instead(algorithm_db):
    db, _ = algorithm_db
    result = invoke(db, "merges", "1", "--vocab", "unigram:rus_Cyrl")
    assert result.exit_code == 1
    assert "unigram:rus_Cyrl is a unigram vocabulary, counted by Hugging Face tokenizers: it has " \
           "no merges" in result.output


@pytest.mark.slow
def test_export_writes_the_stored_model_and_its_library_loads_it(algorithm_db, tmp_path):
    db, _ = algorithm_db
    out = tmp_path / "models"
    result = invoke(db, "export", "1", "--tokenizer", "unigram", "--size", "520", "--out", out)
    assert result.exit_code == 0, result.output
    written = out / "unigram-words-520.tokenizer.json"
    assert result.stdout.strip() == str(written)
    assert "gives the run's count on all 18 measured units" in result.output
    loaded = tokenizers.Tokenizer.from_file(str(written))
    data = load_run_data(open_db(db), 1)
    for lang, texts in TINY.items():
        ids = [loaded.encode(text, add_special_tokens=False).ids for text in texts]
        assert [len(i) for i in ids] == data.counts[("unigram", "words", 520)][lang].tolist()
        assert [loaded.decode(i) for i in ids] == texts
    document = json.loads(cli_output(db, "export", "1"))
    models = next(v["models"] for v in document["vocabularies"] if v["scope"] == "unigram")
    assert models[0]["sha256"] == hashlib.sha256(written.read_bytes()).hexdigest()
    result = invoke(db, "export", "1", "--tokenizer", "wordpiece:kor_Hang", "--out", out)
    assert result.exit_code == 0, result.output
    assert (out / "wordpiece-kor_Hang-words-600.tokenizer.json").is_file()


def test_bad_algorithm_settings_are_refused_with_the_flag_and_nothing_stored(db):
    before = dump(db)
    for args, message in [
        (("--vocab", "600", "--algorithm", "sentencepiece"),
         "--algorithm must be among bpe, unigram, wordpiece, not 'sentencepiece'"),
        (("--vocab", "300", "--algorithm", "wordpiece", "--pretokenize", "words"),
         "--vocab 300: wordpiece (--algorithm) trains sizes from 512"),
        (("--vocab", "600", "--algorithm", "wordpiece"),
         "--algorithm wordpiece needs a pre-tokenizer other than none (--pretokenize"),
        (("--vocab", "600", "--algorithm", " , "),  # given but empty: not quietly BPE alone
         "--algorithm needs at least one algorithm (bpe, unigram, wordpiece)"),
    ]:
        result = invoke(db, "run", *args, "--no-report")
        assert result.exit_code == 1, result.output
        assert message in " ".join(result.output.split()), result.output
    assert dump(db) == before
    result = invoke(db, "export", "1", "--size", "520")
    assert result.exit_code != 0 and "--size and --pretokenizer are for --tokenizer" in result.output


def test_an_algorithm_named_twice_is_trained_once_not_counted_against_the_three(db):
    # Four names, two algorithms: not "takes at most 3 values, not 4".
    result = invoke(db, "run", "--vocab", "520", "--algorithm", "bpe,bpe,unigram",
                    "--algorithm", "unigram", "--no-per-language", "--no-report")
    assert result.exit_code == 0, result.output
    assert json.loads(cli_output(db, "runs", "--json"))[0]["algorithms"] == ["bpe", "unigram"]


def test_the_algorithm_tables_fit_80_columns_going_on_to_a_second_part(algorithm_db):
    # Issue 52's rule for every table: at 80 columns no line is wider, the columns that do not
    # fit go on to a further table with the rows again (they overflowed before, to 111).
    db, _ = algorithm_db
    result = invoke(db, "show", "1", env={"COLUMNS": "80", "LINES": None})
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if not line.startswith("Note:")]
    assert [line for line in lines if len(line) > 80] == [], result.stdout
    assert "Premium vs eng_Latn by algorithm, pre-tokenizer words (2 of 2)" in result.stdout
    for header in ("bpe 520", "unigram 600", "wordpiece 600", "wordpiece 600 vs bpe"):
        assert header in result.stdout, header
