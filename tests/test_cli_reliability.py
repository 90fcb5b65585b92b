"""Hostile input and hostile situations: every one is a clear message, a non-zero exit, and a
database exactly as it was (issue 9's list, one regression test or more per item)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlite_utils import Database
from typer.testing import CliRunner

from analyzer.cli import app
from analyzer.metrics import load_run_data
from analyzer.runs import ResultsNotStored, RunSettings, execute_run
from analyzer.store import get_run, load_counts, load_merges, open_db, recover_run
from helpers import dump, invoke

runner = CliRunner()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# 2. A write lock held past the busy timeout: the results are kept in a file, never lost.

@pytest.fixture
def impatient_db(tiny_db, monkeypatch):
    """The tiny database, opened to wait at most 0.2 s for another process's write lock."""
    monkeypatch.setenv("ANALYZER_BUSY_TIMEOUT", "0.2")
    return open_db(tiny_db.path)


FAIRNESS_SETTINGS = RunSettings(sizes=[270, 300], parity=True, weights={"eng": 2}, jobs=1)


def test_results_that_cannot_be_written_are_kept_and_recovered(impatient_db):
    tiny_db = impatient_db
    path = tiny_db.path
    locker = sqlite3.connect(path, isolation_level=None)

    def stage(message):  # another process takes the write lock just before the final write
        if message == "storing results":
            locker.execute("BEGIN IMMEDIATE")

    with pytest.raises(ResultsNotStored) as caught:
        execute_run(tiny_db, FAIRNESS_SETTINGS, stage=stage)
    message = str(caught.value)
    assert "could not be written" in message and "is locked by another process" in message
    saved = Path(message.split("They are kept in ")[1].split(";")[0])
    assert saved.exists() and saved.parent == path.parent
    locker.execute("ROLLBACK")
    # The lock also kept the run from being marked; once its process is gone, the next
    # command marks it and says where its results are.
    assert get_run(tiny_db, 1).status == "running"
    tiny_db.execute("UPDATE runs SET pid = 999999999, pid_start = NULL WHERE id = 1")
    tiny_db.conn.commit()
    run = get_run(open_db(path), 1)
    assert run.status == "interrupted" and f"analyzer recover {saved}" in run.error
    assert tiny_db.execute("SELECT count(*) FROM vocabularies").fetchone()[0] == 0

    assert recover_run(tiny_db, saved) == 1
    assert get_run(tiny_db, 1).status == "complete"
    again = execute_run(tiny_db, FAIRNESS_SETTINGS)
    assert load_counts(tiny_db, 1) == load_counts(tiny_db, again)
    assert load_merges(tiny_db, 1, "shared") == load_merges(tiny_db, again, "shared")
    assert load_merges(tiny_db, 1, "parity") == load_merges(tiny_db, again, "parity")
    recovered, fresh = (load_run_data(tiny_db, run_id) for run_id in (1, again))
    assert recovered.fairness == fresh.fairness  # replacements, histograms, chosen languages
    assert recovered.run.weights == {"eng_Latn": 2} and recovered.run.parity


def test_recovered_results_keep_the_trained_models(impatient_db):
    pytest.importorskip("tokenizers")
    from analyzer.store import load_model, model_digests

    locker = sqlite3.connect(impatient_db.path, isolation_level=None)
    settings = RunSettings(sizes=[520], algorithms=["wordpiece"], pretokenizers=["words"],
                           per_language=False, jobs=1)

    def stage(message):
        if message == "storing results":
            locker.execute("BEGIN IMMEDIATE")

    with pytest.raises(ResultsNotStored) as caught:
        execute_run(impatient_db, settings, stage=stage)
    saved = Path(str(caught.value).split("They are kept in ")[1].split(";")[0])
    locker.execute("ROLLBACK")
    assert recover_run(impatient_db, saved) == 1
    again = execute_run(impatient_db, settings)
    assert model_digests(impatient_db, 1) == model_digests(impatient_db, again)
    assert load_model(impatient_db, 1, "wordpiece", "words").document == \
        load_model(impatient_db, again, "wordpiece", "words").document


def test_recover_through_the_command_line_and_its_refusals(impatient_db, tmp_path):
    tiny_db = impatient_db
    locker = sqlite3.connect(tiny_db.path, isolation_level=None)
    stage = lambda m: m == "storing results" and locker.execute("BEGIN IMMEDIATE")  # noqa: E731
    with pytest.raises(ResultsNotStored):
        execute_run(tiny_db, RunSettings(sizes=[300], jobs=1), stage=stage)
    locker.execute("ROLLBACK")
    saved = next(tiny_db.path.parent.glob("*.pending.json.gz"))
    other = tmp_path / "other.db"
    assert invoke(other, "ingest").exit_code == 0
    result = invoke(other, "recover", saved)
    assert result.exit_code == 1 and "pass the --db it was made for" in result.output
    junk = tmp_path / "junk.json.gz"
    junk.write_bytes(b"not gzip")
    result = invoke(tiny_db.path, "recover", junk)
    assert result.exit_code == 1 and "not a pending-results file" in result.output
    result = invoke(tiny_db.path, "recover", saved)
    assert result.exit_code == 0, result.output
    result = invoke(tiny_db.path, "recover", saved)
    assert result.exit_code == 1 and "is complete" in result.output


def test_a_lock_held_briefly_is_waited_for(impatient_db):
    """A second attempt that finds the lock free succeeds: nothing to recover."""
    tiny_db = impatient_db
    locker = sqlite3.connect(tiny_db.path, isolation_level=None)
    seen = []

    def stage(message):
        seen.append(message)
        if message == "storing results":
            locker.execute("BEGIN IMMEDIATE")
        elif message.startswith("storing results (the database is locked"):
            locker.execute("ROLLBACK")  # the other process finishes its write

    run_id = execute_run(tiny_db, RunSettings(sizes=[300], jobs=1), stage=stage)
    assert get_run(tiny_db, run_id).status == "complete"
    assert any("attempt 2 of 3" in message for message in seen)


# 3. Settings that could be stored but never read back are refused before anything is stored.

@pytest.mark.parametrize("args, message", [
    (["--seed", "-1"], "--seed must be from 0"),
    (["--seed", str(2**64)], "--seed must be from 0"),
    (["--vocab", "99999999999999999999"], "each must be from 256 to 16,777,216"),
    (["--min-pair-count", str(2**70)], "--min-pair-count must be from 1 to"),
    (["--holdout", "nan"], "--holdout must be"),
])
def test_settings_that_could_never_be_shown_are_refused_first(db, args, message):
    before = dump(db)
    result = invoke(db, "run", "--vocab", "300", *args, "--jobs", "1")
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert dump(db) == before


def test_train_refuses_a_min_pair_count_below_one(tmp_path):
    text = tmp_path / "a.txt"
    text.write_text("abab\n", encoding="utf-8")
    for args, message in ((["--min-pair-count", "0"], "--min-pair-count must be from 1 to"),
                          (["--show", "-1"], "--show must be 0 or more"),
                          (["--vocab", str(2**40)], "above 16,777,216")):
        result = runner.invoke(app, ["train", str(text), *args])
        assert result.exit_code == 1 and message in result.output, result.output


# 4. Output paths are checked before the work.

def test_output_paths_are_checked_before_any_work(db, tmp_path):
    a_file = tmp_path / "taken"
    a_file.write_text("x")
    before = dump(db)
    result = invoke(db, "run", "--vocab", "300", "--out", a_file, "--jobs", "1")
    assert result.exit_code == 1 and "is a file; it must be a folder" in result.output
    assert dump(db) == before  # no run was stored
    result = invoke(db, "run", "--vocab", "300", "--out", a_file / "below", "--jobs", "1")
    assert result.exit_code == 1 and "cannot be made" in result.output
    assert invoke(db, "run", "--vocab", "300", "--no-report", "--jobs", "1").exit_code == 0
    result = invoke(db, "report", "1", "--out", a_file)
    assert result.exit_code == 1 and "is a file" in result.output
    result = invoke(db, "export", "1", "--out", tmp_path / "missing" / "x.json")
    assert result.exit_code == 1 and "does not exist" in result.output
    result = invoke(db, "export", "1", "--out", tmp_path)
    assert result.exit_code == 1 and "is a folder" in result.output
    assert a_file.read_text() == "x"


# 5. The same ingest from several processes at once.

@pytest.mark.slow
def test_identical_ingests_at_once_all_succeed(tmp_path, tiny_corpus):
    path = tmp_path / "c.db"
    commands = [subprocess.Popen([sys.executable, "-m", "analyzer", "ingest", str(tiny_corpus),
                                  "--db", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for _ in range(6)]
    results = [(c.wait(timeout=120), c.stdout.read().decode(), c.stderr.read().decode())
               for c in commands]
    assert all(code == 0 for code, _, _ in results), results
    outputs = " ".join(out for _, out, _ in results)
    assert outputs.count("Created corpus") == 1
    assert outputs.count("already ingested") == 5
    assert Database(path).execute("SELECT count(*) FROM corpora").fetchone()[0] == 1


# 8, 9, 10. Files that are not (our) databases, read-only databases, newer databases.

def not_databases(tmp_path: Path, good: Path) -> dict[str, Path]:
    random_bytes = tmp_path / "random.db"
    random_bytes.write_bytes(os.urandom(4096))
    readme = tmp_path / "README.md"
    readme.write_text("# a project\n\nnot a database\n")
    truncated = tmp_path / "truncated.db"
    Database(good).execute("PRAGMA wal_checkpoint(TRUNCATE)")
    truncated.write_bytes(good.read_bytes()[:2000])
    other = tmp_path / "other.db"
    Database(other)["notes"].insert({"text": "someone else's"})
    return {"random": random_bytes, "readme": readme, "truncated": truncated, "other": other}


@pytest.mark.slow
@pytest.mark.parametrize("kind, message", [
    ("random", "not a SQLite database"), ("readme", "is a text file"),
    ("truncated", "damaged"), ("other", "a SQLite database of another program"),
])
@pytest.mark.parametrize("command", [["ingest"], ["run", "--vocab", "300"], ["runs"], ["corpora"],
                                     ["show", "1"], ["report", "1"], ["export", "1"]])
def test_a_file_that_is_not_an_analyzer_database_is_left_alone(db, tmp_path, kind, message, command):
    path = not_databases(tmp_path, db)[kind]
    before = digest(path)
    result = invoke(path, *command)
    assert result.exit_code == 1, result.output
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert digest(path) == before
    assert not Path(f"{path}-wal").exists() or kind == "other"


def test_a_read_only_database_is_read_but_never_written(db, tmp_path, immutable):
    assert invoke(db, "run", "--vocab", "300", "--no-report", "--jobs", "1").exit_code == 0
    Database(db).execute("PRAGMA wal_checkpoint(TRUNCATE)")
    immutable(db)
    before = digest(db)
    for command in (["ingest"], ["run", "--vocab", "300", "--jobs", "1"]):
        result = invoke(db, *command)
        assert result.exit_code == 1, result.output
        assert "is read-only" in result.output and "nothing was changed" in result.output
    for command in (["runs"], ["show", "1"], ["export", "1"]):
        result = invoke(db, *command)
        assert result.exit_code == 0, (command, result.output)
    assert digest(db) == before


def test_a_database_from_a_newer_analyzer_is_read_but_not_written(db):
    assert invoke(db, "run", "--vocab", "300", "--no-report", "--jobs", "1").exit_code == 0
    raw = Database(db)
    raw["_sqlite_migrations"].insert({"migration_set": "analyzer", "name": "m999_future",
                                      "applied_at": "2030-01-01"})
    raw.execute("UPDATE meta SET value = '9.0.0' WHERE key = 'analyzer_version'")
    raw.conn.commit()
    before = dump(db)
    for command in (["ingest"], ["run", "--vocab", "300", "--jobs", "1"]):
        result = invoke(db, *command)
        assert result.exit_code == 1, result.output
        text = " ".join(result.output.split())
        assert "newer analyzer (analyzer 9.0.0, schema m999_future)" in text
    assert invoke(db, "show", "1").exit_code == 0
    assert dump(db) == before


# 11. JSONL that is not text.

@pytest.mark.parametrize("line, message", [
    ('{"en": "a\\ud800b", "de": "x"}', "character 1 is a lone surrogate (\\ud800)"),
    ("[" * 100_000, "nested too deeply"),
])
def test_jsonl_that_is_not_text_is_refused(db, tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"en": "ok", "de": "gut"}\n' + line + "\n", encoding="utf-8")
    before = dump(db)
    result = invoke(db, "ingest", path)
    assert result.exit_code == 1 and "line 2" in result.output and message in result.output
    assert dump(db) == before


# 6. Tables read by the csv module itself.

def test_an_unterminated_quote_is_refused_with_the_line_it_opened(db, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('eng_Latn,deu_Latn\nA,"B\nC,D\nE,F\n', encoding="utf-8")
    result = invoke(db, "ingest", path)
    assert result.exit_code == 1 and "line 2: a quoted cell opened in this row is never closed" \
        in result.output


def test_table_cells_keep_line_breaks_and_unusual_separators(tmp_path):
    from analyzer.corpus import read_corpus

    csv_path = tmp_path / "t.csv"
    csv_path.write_text('eng_Latn,deu_Latn\n"two\nlines",zwei\nx,y\n', encoding="utf-8")
    assert read_corpus(csv_path).texts["eng_Latn"] == ["two\nlines", "x"]
    tsv_path = tmp_path / "t.tsv"
    tsv_path.write_text("eng_Latn\tdeu_Latn\na\u2028b\tc\x85d\ne\tf\n", encoding="utf-8")
    assert read_corpus(tsv_path).texts == {"eng_Latn": ["a\u2028b", "e"], "deu_Latn": ["c\x85d", "f"]}


# 7, 15, 16. Codes, encodings, folders and names.

def test_a_made_up_script_code_is_refused(db, tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "eng_Latn.txt").write_text("a\n")
    (folder / "fra_Qwer.txt").write_text("b\n")
    result = invoke(db, "ingest", folder)
    assert result.exit_code == 1 and "unknown script 'Qwer'" in result.output


@pytest.mark.parametrize("encoding, name", [("utf-16", "UTF-16LE"), ("utf-16-be", "UTF-16BE"),
                                            ("utf-32", "UTF-32LE")])
def test_utf16_and_utf32_are_named(db, tmp_path, encoding, name):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "eng_Latn.txt").write_text("a\n")
    (folder / "deu_Latn.txt").write_bytes("Straße und Brücke\n".encode(encoding))
    result = invoke(db, "ingest", folder)
    text = " ".join(result.output.split())
    assert result.exit_code == 1 and f"{name} text; analyzer reads UTF-8" in text and "iconv" in text


@pytest.mark.parametrize("files, message", [
    ({"data.jsonl": '{"en": "a", "de": "b"}\n', "README.md": "# x\n"},
     "is a folder holding data.jsonl; give the file itself"),
    ({"corpus.tsv": "en\tde\na\tb\n"}, "is a folder holding corpus.tsv"),
    ({"notes.pdf": "x", "README.md": "y"}, "no corpus files here (found: README.md, notes.pdf)"),
])
def test_folder_detection_says_what_it_found(db, tmp_path, files, message):
    folder = tmp_path / "c"
    folder.mkdir()
    for name, content in files.items():
        (folder / name).write_text(content)
    result = invoke(db, "ingest", folder)
    assert result.exit_code == 1 and message in " ".join(result.output.split())


def test_names_reach_the_terminal_literally_and_control_characters_are_refused(tmp_path):
    path = tmp_path / "n.db"
    # rich's markup, which a name may hold (a closing tag's '/' it may not: see check_corpus_name)
    result = runner.invoke(app, ["ingest", "--name", "[bold]x[red]", "--db", str(path)])
    assert result.exit_code == 0 and "'[bold]x[red]'" in result.output
    listing = runner.invoke(app, ["corpora", "--db", str(path)], env={"COLUMNS": "200"}).output
    assert "[bold]x[red]" in listing
    for name in ("evil\x1b]0;title\x07", "two\nlines", "rtl\u202eoverride", ""):
        result = runner.invoke(app, ["ingest", "--name", name, "--db", str(path)])
        assert result.exit_code == 1, result.output
        assert "\x1b" not in result.output and "\u202e" not in result.output


# 13. One message for a run that does not exist.

def test_a_missing_run_is_named_the_same_way_by_every_command(db):
    assert invoke(db, "run", "--vocab", "300", "--no-report", "--jobs", "1").exit_code == 0
    for command in (["show", "999"], ["merges", "999"], ["tokenize", "999", "x"],
                    ["export", "999"], ["report", "999"]):
        result = invoke(db, *command)
        assert result.exit_code == 1 and "no run 999; runs here: 1" in result.output, command


# 17. The runs table at 80 columns.

def test_runs_fit_an_80_column_terminal(db):
    for sizes in ("300,512,1024,2048", "256"):
        assert invoke(db, "run", "--vocab", sizes, "--no-report", "--jobs", "1").exit_code == 0
    result = invoke(db, "runs", env={"COLUMNS": "80"})
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in result.output
    assert "complete" in result.output and "300..2048 (4)" in result.output


def _corpora_with_a_broken_store(tmp_path, patch: str) -> subprocess.CompletedProcess:
    """`analyzer corpora` on a new database, in a fresh process whose store is patched first
    (`patch`: Python lines given `store`, the module the command imports when it runs)."""
    db = tmp_path / "a.db"
    subprocess.run([sys.executable, "-m", "analyzer", "ingest", "--db", str(db)], check=True,
                   capture_output=True)
    code = f"import analyzer.cli as c, analyzer.store as store\n{patch}c.main()"
    return subprocess.run([sys.executable, "-c", code, "corpora", "--db", str(db)],
                          capture_output=True, text=True)


# Everything else that can go wrong in a terminal says so in one line.

@pytest.mark.slow
def test_a_tokenizer_library_s_panic_is_said_in_one_line(tmp_path):
    """pyo3's PanicException (tiktoken's and tokenizers' Rust panics: a stack overflow on a
    megabyte of spaces, a malformed tokenizer.json) is a BaseException: it went past every
    handler as a traceback (found attacking issue 69)."""
    done = _corpora_with_a_broken_store(tmp_path, (
        "class PanicException(BaseException): pass\n"
        "def panics(db): raise PanicException('no entry found for key')\n"
        "store.list_corpora = panics\n"))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "library failed on this input" in done.stderr and "no entry found for key" in done.stderr


@pytest.mark.slow
def test_an_unexpected_error_is_one_line_and_a_file(tmp_path):
    # the library's name, which the command imports when it runs
    done = _corpora_with_a_broken_store(tmp_path, "store.list_corpora = lambda db: 1 / 0\n")
    assert done.returncode == 70  # a bug's own code, not a usage error's (2) or the input's (1)
    assert "Traceback" not in done.stderr
    assert "ZeroDivisionError" in done.stderr and "This is a bug" in done.stderr
    details = done.stderr.split("the details are in ")[1].strip()
    assert "Traceback" in Path(details).read_text()
    json.dumps(done.stderr)  # plain text
