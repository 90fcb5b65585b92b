"""`analyzer run`, `runs`, `show`, `merges`, `tokenize`, `export` through the command line."""

from __future__ import annotations

import ast
import csv
import io
import json
import os
import signal

import pytest
from sqlite_utils import Database
from typer.testing import CliRunner

from analyzer.cli import app
from analyzer.store import load_counts, open_db
from helpers import RunProcess, cli_output, invoke, processes_in_session, wait_until_gone

runner = CliRunner()


def test_run_prints_the_table_and_json_has_the_documented_records(db):
    result = invoke(db, "run", "--vocab", "270", "--vocab", "300", "--jobs", "1")
    assert result.exit_code == 0, result.output
    assert "size 270" in result.output and "size 300" in result.output
    assert "rus_Cyrl Russian" in result.output
    result = invoke(db, "show", "1", "--json")
    data = json.loads(result.stdout)
    assert data["run"] == 1 and data["sizes"] == [270, 300]
    # per size: shared x 3 languages, eng_Latn x itself, kor and rus x themselves + pivot
    assert len(data["records"]) == 2 * (3 + 1 + 2 + 2)
    keys = {"vocab", "size", "lang", "tokens", "bytes", "chars", "premium", "byte_premium"}
    assert all(keys <= set(record) for record in data["records"])
    shared = [r for r in data["records"] if r["vocab"] == "shared" and r["size"] == 300]
    stored = {lang: sum(units) for scope, _, size, lang, units in load_counts(open_db(db), 1)
              if scope == "shared" and size == 300}
    assert {r["lang"]: r["tokens"] for r in shared} == stored


def test_run_json_and_runs_json(db):
    result = invoke(db, "run", "--vocab", "256,300", "--no-per-language", "--json", "--jobs", "1")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {r["vocab"] for r in data["records"]} == {"shared"}
    listing = json.loads(invoke(db, "runs", "--json").stdout)
    assert listing[0]["id"] == data["run"] and listing[0]["status"] == "complete"
    assert listing[0]["corpus"] == "tiny"


def test_show_one_size_and_one_vocabulary(db):
    invoke(db, "run", "--vocab", "270,300", "--jobs", "1")
    result = invoke(db, "show", "1", "--size", "300", "--vocab", "kor_Hang")
    assert result.exit_code == 0, result.output
    assert "size 300" in result.output and "size 270" not in result.output
    assert "kor_Hang vocabulary" in result.output
    assert invoke(db, "show", "1", "--size", "999").exit_code == 1
    result = invoke(db, "show", "1", "--vocab", "fra_Latn")
    assert result.exit_code == 1 and "has no vocabulary 'fra_Latn'" in result.output


def test_merges_in_the_seed_format(db):
    invoke(db, "run", "--vocab", "300", "--jobs", "1")
    result = invoke(db, "merges", "1", "--top", "3", "--bytes")
    lines = result.output.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("merge   1: b'") and " times)" in lines[0] and "-> b'" in lines[0]
    text = invoke(db, "merges", "1", "--top", "3").output.splitlines()  # as text, marked
    assert [line for line in text if line.startswith("merge ")][0].startswith("merge   1: '")


def test_tokenize_shows_pieces_ids_and_count(db):
    invoke(db, "run", "--vocab", "300", "--jobs", "1")
    result = invoke(db, "tokenize", "1", "the cat sat", "--size", "256")
    assert result.exit_code == 0, result.output
    assert "11 tokens for 11 bytes" in result.output
    result = invoke(db, "tokenize", "1", "the cat sat")
    assert "tokens for 11 bytes" in result.output and "11 tokens" not in result.output


def test_export_json_and_csv(db, tmp_path):
    invoke(db, "run", "--vocab", "270,300", "--jobs", "1")
    out = tmp_path / "run.json"
    assert invoke(db, "export", "1", "--out", out).exit_code == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert {"vocabularies", "records", "token_report", "measured_units"} <= set(data)
    report = data["token_report"]
    assert report["roundtrip_ok"] is True
    assert set(report["languages"]) == {"eng_Latn", "kor_Hang", "rus_Cyrl"}
    assert report["languages"]["rus_Cyrl"]["curve"][0][0] == 270
    result = invoke(db, "export", "1", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(result.output)))
    assert {"vocab", "size", "lang", "tokens", "premium"} <= set(rows[0])


def test_export_with_each_unit_s_count(db, tmp_path):
    """--units: every measured unit's count under every vocabulary and size, in the JSON (a
    `units` section) and as a long CSV (a row per unit), the same numbers as the store's."""
    from analyzer.metrics import load_run_data
    from analyzer.store import open_db

    invoke(db, "run", "--vocab", "270,300", "--pretokenize", "none,words", "--jobs", "1")
    data = load_run_data(open_db(db), 1)
    out = tmp_path / "units.json"
    assert invoke(db, "export", "1", "--units", "--out", out).exit_code == 0
    document = json.loads(out.read_text(encoding="utf-8"))
    units = document["measured_units"]
    assert len(document["units"]) == sum(len(by_lang) for by_lang in data.counts.values())
    for entry in document["units"]:
        expected = data.counts[(entry["vocab"], entry["pretokenizer"], entry["size"])][entry["lang"]]
        assert entry["tokens"] == expected.tolist() and len(entry["tokens"]) == len(units)
    assert "units" not in json.loads(cli_output(db, "export", "1"))  # only when asked
    rows = list(csv.DictReader(io.StringIO(cli_output(db, "export", "1", "--units", "--format",
                                                      "csv"))))
    assert list(rows[0]) == ["vocab", "pretokenizer", "size", "lang", "unit", "tokens"]
    assert len(rows) == len(document["units"]) * len(units)
    for row in rows[::7]:
        key = (row["vocab"], row["pretokenizer"] or None, int(row["size"]))
        counts = data.counts[key][row["lang"]]
        assert int(row["tokens"]) == counts[units.index(int(row["unit"]))]
    result = invoke(db, "export", "1", "--units", "--tokenizer", "shared", "--out", tmp_path)
    assert result.exit_code == 1 and "--units, --reference and --bill are for the run's export" in result.output


ERRORS = [
    (["run", "--vocab", "100"], "--vocab 100: each must be from 256 to 16,777,216"),
    (["run", "--vocab", "abc"], "'abc' is not a whole number"),
    (["run", "--vocab", "none"], "nothing to measure"),  # none as the help says: no sizes
    (["run", "--vocab", "none,512"], "none trains nothing, so it takes no sizes beside it"),
    (["run", "--vocab", "300", "--corpus", "nope"], "no corpus named 'nope'"),
    (["run", "--vocab", "300", "--pivot", "deu_Latn"], "--pivot deu_Latn is not among"),
    (["run", "--vocab", "300", "--langs", ","], "no languages"),
    (["run", "--vocab", "300", "--langs", "eng_Latn,fra_Latn"], "fra_Latn is not in corpus 'tiny'"),
    (["run", "--vocab", "300", "--langs", "klingonish"], "unknown language code"),
    (["run", "--vocab", "300", "--holdout", "1.5"], "--holdout must be"),
    (["run", "--vocab", "300", "--min-pair-count", "0"], "--min-pair-count must be"),
    (["run", "--vocab", "300", "--jobs", "0"], "--jobs must be from 1 to 256, not 0"),
    (["show", "9"], "no run 9"),
    (["merges", "9"], "no run 9; there are no runs yet"),
    (["tokenize", "9", "text"], "no run 9; there are no runs yet"),
]


@pytest.mark.parametrize("args, message", ERRORS)
def test_run_errors_are_clear_and_change_nothing(db, args, message):
    before = list(Database(db).iterdump())
    result = invoke(db, *args)
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert list(Database(db).iterdump()) == before


def test_choices_are_checked_by_the_command_line(db):
    for args, value in ((["export", "1", "--format", "xml"], "'xml'"),
                        (["run", "--vocab", "300", "--tie-break", "last"], "'last'")):
        result = runner.invoke(app, [*args, "--db", str(db)], env={"COLUMNS": "200"})
        assert result.exit_code == 2 and f"{value} is not one of" in result.output


def test_tokenize_refuses_sizes_the_vocabulary_lacks(db):
    invoke(db, "run", "--vocab", "300", "--jobs", "1")
    for size in ("100", "100000"):
        result = invoke(db, "tokenize", "1", "the cat", "--size", size)
        assert result.exit_code == 1 and "is outside 256.." in result.output


def test_a_database_in_a_missing_folder(tmp_path, tiny_corpus):
    result = runner.invoke(app, ["ingest", str(tiny_corpus), "--db", str(tmp_path / "no" / "a.db")])
    assert result.exit_code == 1 and "no such folder for the database" in result.output


def test_several_corpora_need_a_choice(db, tmp_path):
    invoke(db, "ingest", "--name", "sample")
    result = invoke(db, "run", "--vocab", "300")
    assert result.exit_code == 1 and "several corpora (tiny, sample)" in result.output


def test_no_database_yet(tmp_path):
    result = runner.invoke(app, ["run", "--vocab", "300", "--db", str(tmp_path / "none.db")])
    assert result.exit_code == 1 and "no database here yet" in result.output


STALL = {"ANALYZER_TEST_STALL": "1"}
"""Trainings wait after their first progress line until the process is stopped: a signal
sent after that line lands mid-run, whatever the machine's speed or load."""


@pytest.fixture
def db_with_a_run(db):
    assert invoke(db, "run", "--vocab", "300", "--jobs", "1").exit_code == 0  # an earlier run
    return db


def consistent(db_path, run_id):
    db = Database(db_path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    assert db.execute("SELECT count(*) FROM vocabularies WHERE run_id = ?", [run_id]).fetchone()[0] == 0
    earlier = db.execute("SELECT status FROM runs WHERE id = 1").fetchone()[0]
    assert earlier == "complete"
    assert db.execute("SELECT count(*) FROM vocabularies WHERE run_id = 1").fetchone()[0] == 4


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("signal_number, word", [(signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")])
def test_a_stop_signal_marks_the_run_interrupted_and_stores_nothing(db_with_a_run, jobs,
                                                                    signal_number, word):
    run = RunProcess("run", "--vocab", "60000", "--jobs", str(jobs), "--db", str(db_with_a_run),
                     env=STALL)
    run.wait_for("training")
    run.process.send_signal(signal_number)
    code, _, stderr = run.finish()
    assert code == 130, stderr
    assert "marked interrupted" in stderr and "Traceback" not in stderr
    status = Database(db_with_a_run).execute("SELECT status, error FROM runs WHERE id = 2").fetchone()
    assert status == ("interrupted", f"stopped by {word}")
    consistent(db_with_a_run, 2)


@pytest.mark.slow
def test_a_run_started_with_ctrl_c_ignored_keeps_ignoring_it_and_stops_on_sigterm(db_with_a_run):
    """A program started with SIGINT ignored (a background job of a script, `nohup`-style
    launchers) keeps it ignored, as POSIX programs do; SIGTERM still stops it cleanly. SIGINT
    is sent first: had it been handled, the run would say Ctrl-C stopped it."""
    run = RunProcess("run", "--vocab", "60000", "--jobs", "1", "--db", str(db_with_a_run),
                     env=STALL, ignore=("SIGINT",))
    run.wait_for("training")
    run.process.send_signal(signal.SIGINT)
    run.process.send_signal(signal.SIGTERM)
    code, _, stderr = run.finish()
    assert code == 130, stderr
    status = Database(db_with_a_run).execute("SELECT status, error FROM runs WHERE id = 2").fetchone()
    assert status == ("interrupted", "stopped by SIGTERM")
    consistent(db_with_a_run, 2)


@pytest.mark.slow
def test_a_killed_run_is_said_interrupted_by_every_next_command_and_marked_by_the_next_write(
        db_with_a_run, tmp_path):
    """Reads never write: each says the killed run is interrupted (its process is gone)
    without touching the database; the next command that writes anyway (a run) marks it."""
    run = RunProcess("run", "--vocab", "60000", "--jobs", "1", "--db", str(db_with_a_run), env=STALL)
    run.wait_for("training")
    run.process.send_signal(signal.SIGKILL)
    run.finish()
    status = "SELECT status, error FROM runs WHERE id = 2"
    before = list(Database(db_with_a_run).iterdump())
    listed = json.loads(invoke(db_with_a_run, "runs", "--json").stdout)[1]
    assert listed["status"] == "interrupted" and "killed" in listed["error"]
    for command in (["show", "2"], ["report", "2"], ["export", "2"], ["merges", "2"],
                    ["tokenize", "2", "the cat"]):
        result = invoke(db_with_a_run, *command)
        assert result.exit_code == 1 and "run 2 is interrupted" in result.output, command
    assert list(Database(db_with_a_run).iterdump()) == before  # nothing was written
    assert Database(db_with_a_run).execute(status).fetchone()[0] == "running"
    assert invoke(db_with_a_run, "run", "--vocab", "300", "--jobs", "1", "--no-report").exit_code == 0
    marked = Database(db_with_a_run).execute(status).fetchone()
    assert marked[0] == "interrupted" and "killed" in marked[1]
    consistent(db_with_a_run, 2)


@pytest.mark.slow
def test_no_process_of_a_run_survives_a_sigkill_of_the_command(db_with_a_run):
    run = RunProcess("run", "--vocab", "300,512,1024", "--cross", "--jobs", "2", "--no-report",
                     "--db", str(db_with_a_run), env=STALL)
    run.wait_for("training")  # sent by a worker: the pool is up and training
    assert len(processes_in_session(run.pid)) == 3  # the command and its two workers
    os.kill(run.pid, signal.SIGKILL)
    run.finish()
    assert wait_until_gone(run.pid) == []


def test_pretokenizers_through_the_command_line(db):
    result = invoke(db, "run", "--vocab", "270,300", "--pretokenize", "none,cl100k",
                    "--pretokenize", "words", "--jobs", "1", "--no-report")
    assert result.exit_code == 0, result.output
    assert "same text [cl100k]" in result.output and "same text [words]" in result.output
    records = json.loads(invoke(db, "show", "1", "--json").stdout)["records"]
    assert {r["pretokenizer"] for r in records} == {"none", "cl100k", "words"}
    result = invoke(db, "show", "1", "--pretokenizer", "words")
    assert result.exit_code == 0 and "same text [words]" in result.output
    assert "same text [cl100k]" not in result.output
    result = invoke(db, "show", "1", "--pretokenizer", "o200k")
    assert result.exit_code == 1 and "has no pre-tokenizer 'o200k'; it has: none, cl100k, words" in result.output
    words = invoke(db, "merges", "1", "--pretokenizer", "words", "--top", "500", "--bytes").output
    tokens = [ast.literal_eval(line.split("-> ")[1].split("  ")[0]) for line in words.splitlines()]
    assert tokens and all(b" " not in token.lstrip(b" ") for token in tokens)  # no merge crosses a word
    result = invoke(db, "tokenize", "1", "the cat sat", "--pretokenizer", "words", "--size", "256")
    assert "11 tokens for 11 bytes" in result.output
    result = invoke(db, "merges", "1", "--pretokenizer", "gpt2")
    assert result.exit_code == 1 and "has no vocabulary 'shared (gpt2)'" in result.output
    listing = json.loads(invoke(db, "runs", "--json").stdout)
    assert listing[0]["pretokenizers"] == ["none", "cl100k", "words"]


def test_a_bad_pretokenizer_changes_nothing(db):
    before = list(Database(db).iterdump())
    for args, message in ((["--pretokenize", "re:[a-z]+"], "loses text: eng_Latn unit 1"),
                          (["--pretokenize", "re:(unclosed"], "not a regular expression"),
                          (["--pretokenize", "bpe"], "unknown pre-tokenizer 'bpe'")):
        result = invoke(db, "run", "--vocab", "300", *args, "--jobs", "1")
        assert result.exit_code == 1 and message in " ".join(result.output.split()), result.output
    assert list(Database(db).iterdump()) == before


def test_train_takes_a_pretokenizer(tmp_path):
    corpus = tmp_path / "a.txt"
    corpus.write_text("the cat sat on the mat\nthe dog sat on the log\n", encoding="utf-8")
    result = runner.invoke(app, ["train", str(corpus), "--vocab", "300", "--pretokenize", "words",
                                 "--json"])
    merges = [((m["left"], m["right"]), m["id"]) for m in json.loads(result.stdout)["merges"]]
    from analyzer.bpe import reference as ref

    chunks = [c for line in ["the cat sat on the mat", "the dog sat on the log"]
              for c in ref.pretokenize(line, r"\s?\S+|\s+")]
    assert merges == ref.train_many(chunks, 300)
    result = runner.invoke(app, ["train", str(corpus), "--pretokenize", "re:[a-z]+"])
    assert result.exit_code == 1 and "loses text: text 0, character 3" in result.output


def test_a_pattern_that_splits_around_its_matches_is_taken_whole_commas_and_all(db):
    result = invoke(db, "run", "--vocab", "280", "--pretokenize", "split:[,.]|\\s{2,}",
                    "--pretokenize", "superbpe", "--jobs", "1", "--no-report")
    assert result.exit_code == 0, result.output
    listing = json.loads(invoke(db, "runs", "--json").stdout)
    assert listing[0]["pretokenizers"] == ["split:[,.]|\\s{2,}", "superbpe"]


def test_a_parity_run_through_the_command_line(db):
    result = invoke(db, "run", "--vocab", "280,300", "--parity", "--weight", "eng_Latn=2",
                    "--global-merges", "3", "--jobs", "1", "--no-report")
    assert result.exit_code == 0, result.output
    assert "parity 300" in result.output
    assert "Parity: at 300, Gini of premiums" in result.output
    document = json.loads(invoke(db, "show", "1", "--json").stdout)
    assert {r["vocab"] for r in document["records"]} >= {"shared", "parity"}
    assert {(s["vocab"], s["size"]) for s in document["summaries"]} == \
        {(vocab, size) for vocab in ("shared", "parity") for size in (280, 300)}
    assert {row["vocab"] for row in document["equal_cost_sizes"]} >= {"shared", "parity"}
    assert all(row["reference_size"] == 300 for row in document["equal_cost_sizes"])
    exported = json.loads(invoke(db, "export", "1").stdout)
    assert exported["parity"] is True and exported["global_merges"] == 3
    assert exported["weights"] == {"eng_Latn": 2}
    assert {row["vocab"] for row in exported["attribution"]} == {"shared", "parity"}
    assert exported["divergence"][0]["languages"] and exported["divergence"][0]["matrix"]
    by_language = invoke(db, "merges", "1", "--by-language", "--vocab", "parity")
    assert by_language.exit_code == 0, by_language.output
    assert "Who got the parity vocabulary" in by_language.output
    assert "chosen for" in by_language.output and "kor_Hang" in by_language.output


@pytest.mark.parametrize("args, message", [
    (["--weight", "eng_Latn"], "write LANG=N"),
    (["--weight", "eng_Latn=x"], "'x' is not a whole number"),
    (["--weight", "eng_Latn=0"], "--weight eng_Latn=0: each must be from 1 to"),
    (["--weight", "fra_Latn=2"], "fra_Latn is not a language of this run"),
    (["--global-merges", "2"], "add --parity"),
    (["--parity", "--langs", "eng_Latn"], "--parity needs two languages"),
])
def test_bad_fairness_flags_fail_clearly_and_store_nothing(db, args, message):
    result = invoke(db, "run", "--vocab", "300", "--jobs", "1", *args)
    assert result.exit_code != 0 and message in result.output
    assert "Traceback" not in result.output
    assert Database(db).execute("SELECT count(*) FROM runs").fetchone()[0] == 0


RUNAWAY = [rf"re:{p}|[\s\S]" for p in (r"(?:a|a)*$", r"(?:a|aa)+$", r"(?:aa|a)*$", r"(?:\w|\w)*$")]
RUNAWAY += [r"split:(?:a|a)*$"]  # splitting around matches is bounded the same way
"""Patterns that backtrack catastrophically, in the `regex` module, on a run of a's with
something else at its end (and, on other text, cut it into characters: lossless). The module
sees through some classics, (a+)+$ and (a*)*b among them."""


@pytest.mark.slow
@pytest.mark.parametrize("pattern", RUNAWAY)
def test_a_runaway_pattern_is_refused_naming_the_unit_and_nothing_is_stored(tmp_path, pattern):
    corpus = tmp_path / "c.tsv"
    corpus.write_text("eng_Latn\trus_Cyrl\nthe cat\tкот\n" + "a" * 40 + "!\tкот!\n", encoding="utf-8")
    db = tmp_path / "a.db"
    assert invoke(db, "ingest", corpus).exit_code == 0
    before = list(Database(db).iterdump())
    code, _, stderr = RunProcess("run", "--vocab", "300", "--pretokenize", pattern, "--jobs", "1",
                                 "--db", str(db)).finish()
    message = " ".join(stderr.split())
    assert code == 1, stderr
    assert f"--pretokenize {pattern} runs away: eng_Latn unit 2 of corpus 'c'" in message, message
    assert "catastrophic backtracking" in message
    assert "nothing was stored" in message and list(Database(db).iterdump()) == before


@pytest.mark.parametrize("pattern", [r"re:(a|b)|\s", r"re:(\w)(\w)?|\W", r"split:(,)"])
def test_a_pattern_with_capturing_groups_is_refused_before_anything(db, pattern):
    """findall returns a pattern's groups, not its matches (tuples for two): such a pattern's
    chunks would not be its matches, so it is refused with the fix."""
    result = invoke(db, "run", "--vocab", "300", "--pretokenize", pattern, "--jobs", "1")
    assert result.exit_code == 1 and "capturing group(s)" in result.output and "(?:...)" in result.output
    assert "bug" not in result.output


@pytest.mark.slow
def test_ctrl_c_before_the_run_is_recorded_says_nothing_was_stored(db_with_a_run):
    run = RunProcess("run", "--vocab", "300", "--jobs", "1", "--db", str(db_with_a_run),
                     env={"ANALYZER_TEST_STALL_AT": "check_lossless"})
    run.wait_for("analyzer-test: stalled before check_lossless")
    run.process.send_signal(signal.SIGINT)
    code, _, stderr = run.finish()
    assert code == 130 and "before the run was recorded: nothing was stored" in stderr, stderr
    assert "marked interrupted" not in stderr
    assert Database(db_with_a_run).execute("SELECT count(*) FROM runs").fetchone()[0] == 1


def test_memory_that_runs_out_once_the_run_is_stored_says_the_run_is_stored(tmp_path,
                                                                           monkeypatch):
    """Found by an attack (issue 68): under `ulimit -v 450000` a run completed and was stored,
    then writing its report ran out of memory: "The command ran out of memory", exit 1, as if
    nothing had been done. Now it says the run is stored and which command gives the rest."""
    import analyzer.report as report_package

    db = tmp_path / "a.db"
    assert invoke(db, "ingest").exit_code == 0

    def short(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(report_package, "write_report", short)
    result = invoke(db, "run", "--vocab", "300", "--out", tmp_path / "reports")
    said = " ".join(result.output.split())
    assert result.exit_code == 1, result.output
    assert "Run 1 is stored. The command ran out of memory (MemoryError)" in said, said
    assert "Then: analyzer report 1" in said and "Traceback" not in said
    assert "complete" in invoke(db, "runs").output
