"""The command line: help, version, and the `train` command on small files."""

import json

from typer.testing import CliRunner

from analyzer import __version__, bpe
from analyzer.cli import app

runner = CliRunner()


def test_version_and_help():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "train" in result.output


def test_train_prints_a_summary_and_the_first_merges(tmp_path):
    corpus = tmp_path / "eng.txt"
    corpus.write_text("the cat sat on the mat\nthe dog sat on the log\n", encoding="utf-8")
    result = runner.invoke(app, ["train", str(corpus), "--vocab", "270", "--show", "3"])
    assert result.exit_code == 0, result.output
    assert "2 texts, 44 bytes" in result.output
    merges = bpe.train(["the cat sat on the mat", "the dog sat on the log"], 270)
    tokens = sum(len(bpe.encode(t, merges)) for t in ["the cat sat on the mat", "the dog sat on the log"])
    assert f"-> {tokens} tokens" in result.output
    assert f"with {len(merges)} merges" in result.output
    assert "Stopped early at size" in result.output
    assert "'he '" in result.output


def test_train_json_is_the_engine_merge_list(tmp_path):
    corpus = tmp_path / "mix.txt"
    corpus.write_text("привет мир\nпривет всем\nhello world\n", encoding="utf-8")
    result = runner.invoke(app, ["train", str(corpus), "--vocab", "300", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    expected = bpe.train(["привет мир", "привет всем", "hello world"], 300)
    assert [((m["left"], m["right"]), m["id"]) for m in data["merges"]] == expected
    assert data["stop_reason"] == "min_pair_count"


def test_train_rejects_a_file_that_is_not_utf8(tmp_path):
    corpus = tmp_path / "latin1.txt"
    corpus.write_bytes(b"caf\xe9\n")
    result = runner.invoke(app, ["train", str(corpus)])
    assert result.exit_code == 1
    assert "latin1.txt" in result.output and "byte offset 3" in result.output


def test_train_rejects_a_size_below_the_byte_alphabet(tmp_path):
    corpus = tmp_path / "a.txt"
    corpus.write_text("abc\n", encoding="utf-8")
    result = runner.invoke(app, ["train", str(corpus), "--vocab", "100"])
    assert result.exit_code == 1
    assert "below 256" in result.output


def test_train_on_several_files_counts_tokens_per_file(tmp_path):
    english = tmp_path / "eng.txt"
    russian = tmp_path / "rus.txt"
    english.write_text("the cat sat\nthe cat ran\n", encoding="utf-8")
    russian.write_text("кот сидел\nкот бежал\n", encoding="utf-8")
    result = runner.invoke(app, ["train", str(english), str(russian), "--vocab", "280"])
    assert result.exit_code == 0, result.output
    merges = bpe.train(["the cat sat", "the cat ran", "кот сидел", "кот бежал"], 280)
    russian_tokens = sum(len(bpe.encode(t, merges)) for t in ["кот сидел", "кот бежал"])
    english_tokens = sum(len(bpe.encode(t, merges)) for t in ["the cat sat", "the cat ran"])
    row = next(line for line in result.output.splitlines() if "rus.txt" in line)
    assert f"{russian_tokens}" in row
    assert f"{russian_tokens / english_tokens:.2f}x" in row
