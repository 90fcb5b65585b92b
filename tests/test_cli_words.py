"""The command line in the user's words (issue 52): mistakes met with "did you mean", sizes
written as people write them, help without bounds no one needs, the commands in the order of
the work, merges as the text they stand for, and stops that say what was kept."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer.cli import app
from helpers import TINY, invoke

SAMPLE = Path(__file__).resolve().parents[1] / "parallel_corpora" / "harbour_town"
runner = CliRunner()


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    """The sample corpus and one run of it: a shared and a per-language vocabulary at 1,024."""
    db = tmp_path_factory.mktemp("words") / "a.db"
    assert invoke(db, "ingest", SAMPLE).exit_code == 0
    result = invoke(db, "run", "--vocab", "1Ki", "--jobs", "1", "--no-report")
    assert result.exit_code == 0, result.output
    return db


@pytest.mark.parametrize(("typed", "meant"), [
    ("lama3", "did you mean llama3?"),
    ("mistral", "did you mean mistral-v1, mistral-v3 or mistral-tekken?"),
    ("GPT2", "did you mean gpt2?"),
])
def test_a_tokenizer_typo_gets_the_names_it_is_close_to(sample, typed, meant):
    result = invoke(sample, "run", "-t", typed, "--no-report")
    assert result.exit_code == 1 and meant in result.output, result.output
    assert "gemma3" not in result.output  # not the whole catalog


def test_a_catalog_name_given_a_file_says_how_a_file_of_ones_own_is_given(sample, tmp_path):
    result = invoke(sample, "run", "-t", f"cl100k={tmp_path / 'x.tiktoken'}", "--no-report")
    assert result.exit_code == 1 and "did you mean cl100k_base?" in result.output
    assert "FILE@BASE" in result.output and "no such file" not in result.output


def test_corpus_source_and_option_typos_get_suggestions(sample):
    result = invoke(sample, "run", "--corpus", "harbor_town", "--vocab", "300")
    assert result.exit_code == 1 and "did you mean harbour_town?" in result.output
    result = invoke(sample, "corpus", "harbour")
    assert result.exit_code == 1 and "did you mean harbour_town?" in result.output
    result = invoke(sample, "run", "--corpus", "harbor", "--vocab", "300")  # the nearest one
    assert result.exit_code == 1 and "did you mean harbour_town?" in result.output
    assert invoke(sample, "sources", "add", "wiki", SAMPLE / "eng_Latn.txt").exit_code == 0
    result = invoke(sample, "sources", "show", "wikki")
    assert result.exit_code == 1 and "did you mean wiki?" in result.output
    result = invoke(sample, "run", "--vocabb", "300")
    assert result.exit_code == 2 and "--vocab" in result.output.split("No such option")[1]


def test_an_unknown_language_lists_the_corpus_s_languages(sample):
    result = invoke(sample, "run", "--langs", "xyz", "--vocab", "300")
    assert result.exit_code == 1
    assert "unknown language code 'xyz'" in result.output
    assert "corpus 'harbour_town' has: arb_Arab, deu_Latn, eng_Latn" in result.output


def test_sizes_take_units_as_byte_sizes_do(sample):
    shown = invoke(sample, "show", "1").stdout
    assert "size 1024" in shown  # --vocab 1Ki
    result = invoke(sample, "run", "--vocab", "0.3k,512", "--jobs", "1", "--no-report",
                    "--no-per-language")
    assert result.exit_code == 0, result.output
    assert "size 300" in result.stdout and "size 512" in result.stdout
    for bad in ("512x", "1.5", "1e400"):
        result = invoke(sample, "run", "--vocab", bad, "--no-report")
        assert result.exit_code == 1 and repr(bad) in result.output, result.output


def test_help_drops_bounds_no_one_reads_and_says_what_leaving_out_means():
    text = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    assert "9,223,372,036,854,775,807" not in text and "4,294,967,295" not in text
    assert "from 256 to 16,777,216" in text  # a bound one needs
    assert "(none: only the production tokenizers are measured)" in " ".join(text.split())
    ingest = runner.invoke(app, ["ingest", "--help"]).output
    assert "Other options" not in ingest and "Options:" in ingest


def test_commands_are_listed_in_the_order_of_the_work():
    text = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    listed = re.findall(r"^  (\w+) ", text.split("Commands:")[1], re.M)
    assert listed[:6] == ["ingest", "corpora", "corpus", "sources", "tokenizers", "run"]
    assert listed.index("serve") > listed.index("export") and listed[-1] == "train"


@pytest.mark.parametrize(("lang", "script"), [("tha_Thai", r"[\u0e00-\u0e7f]"),
                                              ("hin_Deva", r"[\u0900-\u097f]"),
                                              ("jpn_Jpan", r"[\u3040-\u30ff\u4e00-\u9fff]")])
def test_merges_show_thai_hindi_and_japanese_as_text(sample, lang, script):
    lines = invoke(sample, "merges", "1", "--vocab", lang, "--top", "100").stdout.splitlines()
    merges = [line for line in lines if line.startswith("merge ")]
    as_text = [line for line in merges if re.search(f"-> '{script}+'", line)]
    assert len(as_text) >= 10, merges  # whole characters, written as such
    assert not any("\\x" in line for line in merges)  # never Python's byte escapes
    assert lines[-1].startswith("‹hex›")  # what the marks of partial characters mean
    raw = invoke(sample, "merges", "1", "--vocab", lang, "--top", "3", "--bytes").stdout
    assert "b'\\x" in raw


def test_tokenizers_are_taken_as_comma_lists_too(sample):
    from helpers import resolve_or_skip

    resolve_or_skip("cl100k_base")
    resolve_or_skip("gpt2")
    result = invoke(sample, "run", "-t", "cl100k_base,gpt2", "--no-report")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()  # the verdicts' sentences, then the table's title
    at = next(i for i, line in enumerate(lines) if line.startswith("Run "))
    assert lines[at + 1].split() == ["cl100k_base", "gpt2"]
    assert lines[at + 2].split() == ["language", "(GPT-4…)", "(GPT-2)"]


def test_serve_refuses_a_busy_port_before_making_a_database(tmp_path):
    pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        db = tmp_path / "new.db"
        done = subprocess.run([sys.executable, "-m", "analyzer", "serve", "--port",
                               str(taken.getsockname()[1]), "--db", str(db)],
                              capture_output=True, text=True, timeout=120)
    finally:
        taken.close()
    assert done.returncode == 1 and "cannot listen" in done.stderr, done.stderr
    assert not db.exists()


def test_a_run_prints_its_table_as_markdown_or_csv_when_asked(tmp_path):
    corpus = tmp_path / "tiny"
    corpus.mkdir()
    for lang, lines in TINY.items():
        (corpus / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp_path / "a.db"
    assert invoke(db, "ingest", corpus).exit_code == 0
    result = invoke(db, "run", "--vocab", "280", "--jobs", "1", "--no-report", "--format",
                    "markdown")
    assert result.exit_code == 0 and "| language | size 280 | own 280 |" in result.stdout
    result = invoke(db, "run", "--vocab", "280", "--jobs", "1", "--no-report", "--format", "csv")
    assert result.stdout.startswith("vocab,kind,pretokenizer,size,lang,language,tokens,")


def test_a_run_whose_reader_goes_away_is_still_complete(sample):
    """`run ... 2>&1 | head -1`: the run is stored complete, not failed by the closed pipe."""
    command = (f"{sys.executable} -m analyzer run --vocab 280 --langs eng_Latn,fra_Latn "
               f"--no-report --jobs 1 --db {sample} 2>&1 | head -1")
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "loading texts"
    runs = invoke(sample, "runs", "--json").stdout
    assert '"status": "complete"' in runs.split('"id"')[-1]  # the newest run


def test_odd_tokenizer_values_are_refused_clearly_or_taken_whole(sample, tmp_path):
    result = invoke(sample, "run", "-t", "a" * 300, "--no-report")
    assert result.exit_code == 1 and "unknown tokenizer" in result.output
    assert "a" * 100 not in result.output  # the name cut short
    result = invoke(sample, "run", "-t", "a" * 300 + ".tiktoken@cl100k_base", "--no-report")
    assert result.exit_code == 1 and "not a file name this system takes" in result.output
    comma = tmp_path / "my,tok.json"
    comma.write_text("{}", encoding="utf-8")
    result = invoke(sample, "run", "-t", str(comma), "--no-report")
    assert result.exit_code == 1 and "my,tok.json" in result.output  # read whole, then refused
    assert "unknown tokenizer" not in result.output


def test_zero_in_any_form_and_conflicting_formats_are_said_plainly(sample):
    result = invoke(sample, "run", "--vocab", "0e100", "--no-report")
    assert result.exit_code == 1 and "--vocab 0: each must be from 256" in result.output
    result = invoke(sample, "show", "1", "--format", "csv", "--json")
    assert result.exit_code == 1 and "--json is --format json" in result.output


def test_markdown_never_reads_a_name_as_markup():
    from analyzer.cli.tables import markdown_text, new_table

    table = new_table("language", "size 300", title="Run 1 on c**d")
    table.add_row("a|b\\|c", "1.00x")
    text = markdown_text(table)
    assert text.splitlines()[0] == "**Run 1 on c\\*\\*d**"
    assert text.splitlines()[-1] == "| a\\|b\\\\\\|c | 1.00x |"
