"""Hostile input and situations, round 4 (issue 37, items 7 to 13 and 15 to 21): results that
cannot be lost or misattributed, no bug exit on ordinary input, and exits and messages that
say what happened. Each test failed on the main this round started from."""

from __future__ import annotations

import gc
import gzip
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest
from sqlite_utils import Database

from analyzer.runs import ResultsNotStored, RunSettings, execute_run
from analyzer.store import get_run, open_db, recover_run
from helpers import FLORES_CODES, WAIT, RunProcess, cli_output, dump, invoke

# 7. Pending results are named and found by their database's identity, not its file name.


def _pending_run(db_path: Path, monkeypatch) -> Path:
    """A run of the tiny corpus in `db_path` whose results could not be written (the write lock
    held at the final write): the pending-results file."""
    monkeypatch.setenv("ANALYZER_BUSY_TIMEOUT", "0.2")
    db = open_db(db_path)
    locker = sqlite3.connect(db_path, isolation_level=None)
    stage = lambda message: message == "storing results" and locker.execute("BEGIN IMMEDIATE")  # noqa: E731
    with pytest.raises(ResultsNotStored) as caught:
        execute_run(db, RunSettings(sizes=[300], jobs=1, per_language=False), stage=stage)
    locker.execute("ROLLBACK")
    locker.close()
    return Path(str(caught.value).split("They are kept in ")[1].split(";")[0])


def _killed(db_path: Path) -> None:
    """Make the database's run 1 a run whose process is gone."""
    raw = Database(db_path)
    raw.execute("UPDATE runs SET pid = 999999999, pid_start = NULL WHERE id = 1")
    raw.conn.commit()


@pytest.mark.slow
def test_two_databases_of_one_file_name_never_take_each_other_s_pending_results(
        tiny_corpus, tmp_path, monkeypatch):
    first, second = tmp_path / "one" / "a.db", tmp_path / "two" / "a.db"
    for path in (first, second):
        path.parent.mkdir()
        assert invoke(path, "ingest", tiny_corpus).exit_code == 0
    kept = _pending_run(first, monkeypatch)
    # Where results go when the database's own folder cannot take them: the one cache folder
    # every database of this user shares.
    cache = tmp_path / "cache" / "analyzer" / "pending"
    cache.mkdir(parents=True)
    shared = cache / kept.name
    shutil.move(kept, shared)
    # The second database's run 1 died without saving anything (killed).
    second_db = open_db(second)
    second_run = _pending_run(second, monkeypatch)
    second_run.unlink()
    _killed(first)
    _killed(second)
    assert "killed" in get_run(open_db(second), 1).error  # not the first's file
    assert str(shared) in get_run(open_db(first), 1).error  # the first finds its own
    result = invoke(second, "recover", shared)
    assert result.exit_code == 1 and "pass the --db it was made for" in " ".join(result.output.split())
    assert recover_run(open_db(first), shared) == 1
    assert get_run(second_db, 1).status == "interrupted"


def test_a_pending_file_missing_its_fields_is_refused_by_name(db, tmp_path):
    """Item 16: the right format tag, fields missing or of the wrong kind: said, exit 1."""
    base = {"format": "analyzer pending results 1", "database": "x", "run": 1,
            "started": "2026-01-01T00:00:00+00:00", "seconds": 1.0, "vocabularies": []}
    cases = [{k: v for k, v in base.items() if k != "run"}, {**base, "run": "one"},
             {**base, "run": 10**30}, {**base, "vocabularies": [{"scope": "shared"}]},
             {**base, "vocabularies": "none"}, {"format": "analyzer pending results 1"}]
    assert invoke(db, "run", "--vocab", "300", "--jobs", "1", "--no-report").exit_code == 0
    started = get_run(open_db(db), 1).started
    cases.append({**base, "started": started, "vocabularies": [{"scope": "shared", "kind": "x"}]})
    before = dump(db)
    for number, document in enumerate(cases):
        path = tmp_path / f"case{number}.json.gz"
        path.write_bytes(gzip.compress(json.dumps(document).encode()))
        result = invoke(db, "recover", path)
        assert result.exit_code == 1, (document, result.output)
        assert str(path) in " ".join(result.output.split()) and "Traceback" not in result.output
    assert dump(db) == before


# 8. A database deleted during a run.

@pytest.mark.slow
def test_a_database_deleted_during_a_run_fails_the_run_and_keeps_its_results(tmp_path):
    db = tmp_path / "a.db"
    cli_output(db, "ingest")
    go = tmp_path / "go"
    os.mkfifo(go)
    run = RunProcess("run", "--vocab", "300,512", "--jobs", "1", "--no-report", "--db", str(db),
                     env={"ANALYZER_TEST_PAUSE_AT": f"store_results:{go}"})
    run.wait_for("analyzer-test: paused before store_results")
    for name in ("a.db", "a.db-wal", "a.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    go.write_text("go\n")
    code, stdout, stderr = run.finish()
    message = " ".join(stderr.split())
    assert code == 1, stderr
    assert "was deleted while in use" in message and "They are kept in" in message
    kept = Path(message.split("They are kept in ")[1].split(" (JSON")[0])
    document = json.loads(gzip.decompress(kept.read_bytes()))
    assert document["run"] == 1 and {v["scope"] for v in document["vocabularies"]} >= {"shared"}
    assert not db.exists() and stdout == ""


# 9. The content digest is unambiguous.

def test_texts_holding_nul_never_pass_for_other_texts(db, tmp_path):
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text('{"eng_Latn": "a\\u0000b", "fra_Latn": "x"}\n{"eng_Latn": "c", "fra_Latn": "y"}\n')
    second.write_text('{"eng_Latn": "a", "fra_Latn": "x"}\n{"eng_Latn": "b\\u0000c", "fra_Latn": "y"}\n')
    assert invoke(db, "ingest", first, "--name", "coll").exit_code == 0
    result = invoke(db, "ingest", second, "--name", "coll")
    assert result.exit_code == 1 and "already exists" in result.output, result.output
    assert cli_output(db, "corpus", "coll", "--texts").splitlines()[1] == "0,eng_Latn,a\x00b"


def test_the_same_texts_with_other_unit_ids_are_other_content(db, tmp_path):
    first, second = tmp_path / "first.tsv", tmp_path / "second.tsv"
    first.write_text("id\teng_Latn\tfra_Latn\n1\ta\tx\n2\tb\ty\n")
    second.write_text("id\teng_Latn\tfra_Latn\n7\ta\tx\n8\tb\ty\n")
    assert invoke(db, "ingest", first, "--name", "ids").exit_code == 0
    assert invoke(db, "ingest", first, "--name", "ids").output.count("already ingested") == 1
    assert "already exists" in invoke(db, "ingest", second, "--name", "ids").output


def test_a_database_made_before_the_new_digest_still_knows_its_corpora(tiny_corpus, tmp_path):
    """The migration writes every stored corpus's digest again: ingesting the same content is
    still "nothing to do"."""
    db = tmp_path / "old.db"
    assert invoke(db, "ingest", tiny_corpus, "--name", "tiny").exit_code == 0
    raw = Database(db)
    raw.execute("UPDATE corpora SET content_hash = 'made-by-the-old-digest'")
    raw.execute("DELETE FROM _sqlite_migrations WHERE name LIKE 'm012%'")
    raw.execute("DELETE FROM meta WHERE key = 'database_id'")
    raw.conn.commit()
    result = invoke(db, "ingest", tiny_corpus, "--name", "tiny")
    assert result.exit_code == 0 and "already ingested" in result.output, result.output


# 10. Where output goes is checked before any work.

def test_a_report_folder_that_cannot_be_written_is_refused_before_the_run(db, tmp_path, immutable):
    out = tmp_path / "reports"
    out.mkdir()
    immutable(out)
    before = dump(db)
    result = invoke(db, "run", "--vocab", "300", "--jobs", "1", "--out", out)
    assert result.exit_code == 1 and f"--out {out}: cannot write in {out}" in " ".join(result.output.split())
    assert dump(db) == before  # no run recorded
    for command in (["report", "1"], ["export", "1", "--out", out / "x.json"]):
        assert invoke(db, *command).exit_code == 1


# 11. A corpus of more languages than a run may have.

def test_a_corpus_of_more_than_a_thousand_languages_is_refused_at_ingest(db, tmp_path):
    scripts = ("Latn", "Cyrl", "Grek", "Arab", "Deva", "Hebr", "Thai")
    codes = [f"{code[:3]}_{script}" for code in FLORES_CODES for script in scripts]
    codes = list(dict.fromkeys(codes))[:1001]
    path = tmp_path / "wide.tsv"
    path.write_text("\t".join(codes) + "\n" + "\t".join("x" for _ in codes) + "\n")
    before = dump(db)
    result = invoke(db, "ingest", path)
    assert result.exit_code == 1, result.output
    assert "1,001 languages, more than the 1,000 a corpus may have" in " ".join(result.output.split())
    assert dump(db) == before


# 12. Imported counts beyond what a count is stored as.

def test_an_imported_count_beyond_32_bits_is_refused_naming_its_line(db, tmp_path):
    counts = tmp_path / "counts.csv"
    rows = [f"{unit},{lang},5" for unit in range(6) for lang in ("eng_Latn", "kor_Hang", "rus_Cyrl")]
    rows[4] = "1,kor_Hang,4294967296"
    counts.write_text("unit,lang,tokens\n" + "\n".join(rows) + "\n")
    before = dump(db)
    result = invoke(db, "run", "--counts", f"closed={counts}", "--no-report")
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "line 6: tokens 4294967296 is above 4,294,967,295" in text and str(counts) in text
    assert dump(db) == before


# 13. A scheduler address where something else listens.

@pytest.fixture
def not_a_scheduler():
    """Two loopback servers that are no Dask scheduler: one that answers as a web server does
    when it gets anything, one that says nothing; their addresses."""
    pytest.importorskip("distributed")
    servers, stop = [], threading.Event()

    def serve(listener: socket.socket, greeting: bytes) -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            if greeting:
                connection.sendall(greeting)
            servers.append(connection)

    addresses = []
    for greeting in (b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n", b""):
        listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=serve, args=(listener, greeting), daemon=True).start()
        addresses.append(f"tcp://127.0.0.1:{listener.getsockname()[1]}")
    yield addresses
    stop.set()


@pytest.mark.slow
@pytest.mark.cluster
def test_a_scheduler_address_of_another_server_is_said_in_words(db, not_a_scheduler):
    web, silent = not_a_scheduler
    before = dump(db)
    for address, said in ((web, "it answered as a web server does ('HTTP/1.1 400 Bad Request')"),
                          (silent, "said nothing within 5 s")):
        result = invoke(db, "run", "--vocab", "300", "--no-report", "--scheduler", address)
        assert result.exit_code == 1, result.output
        text = " ".join(result.output.split())
        assert f"--scheduler {address} is not a Dask scheduler" in text and said in text
        assert "MemoryError" not in text
    assert dump(db) == before


# 15. Run ids and sizes beyond SQLite's integers.

@pytest.mark.slow
@pytest.mark.parametrize("value", ["100000000000000000000", str(2**63), str(2**63 - 1), "0"])
def test_run_ids_beyond_any_run_are_not_found(db, tmp_path, value):
    assert invoke(db, "run", "--vocab", "300", "--jobs", "1", "--no-report").exit_code == 0
    for command in (["show", value], ["merges", value], ["export", value], ["report", value],
                    ["tokenize", value, "hi"], ["export", value, "--tokenizer", "unigram", "--out", tmp_path]):
        result = invoke(db, *command)
        assert result.exit_code == 1, (command, result.output)
        assert f"no run {value}; runs here: 1" in result.output
    result = invoke(db, "tokenize", "1", "hi", "--size", "100000000000000000000")
    assert result.exit_code == 1 and "outside 256..300" in result.output


def test_train_refuses_a_minimum_count_beyond_any_count(tmp_path):
    from typer.testing import CliRunner

    from analyzer.cli import app

    path = tmp_path / "a.txt"
    path.write_text("aaaa\n")
    result = CliRunner().invoke(app, ["train", str(path), "--min-pair-count", str(10**20)])
    assert result.exit_code == 1 and "--min-pair-count must be from 1 to" in result.output


# 17. Markup nested deeper than recursion goes.

def test_deeply_nested_tmx_markup_is_read(db, tmp_path):
    depth = 50_000
    nested = "<g>" * depth + "deep" + "</g>" * depth
    path = tmp_path / "deep.tmx"
    path.write_text("<?xml version='1.0' encoding='utf-8'?><tmx version='1.4'><header/><body>"
                    f"<tu><tuv xml:lang='en'><seg>a {nested} b</seg></tuv>"
                    "<tuv xml:lang='de'><seg>c</seg></tuv></tu></body></tmx>")
    result = invoke(db, "ingest", path)
    assert result.exit_code == 0, result.output
    assert cli_output(db, "corpus", "deep", "--texts").splitlines()[1] == "0,eng_Latn,a deep b"


# 18. Exits that say what happened.

@pytest.mark.slow
@pytest.mark.parametrize("command", [["ingest"], ["export", "1"], ["export", "1", "--units"]])
def test_sigterm_stops_any_command_with_130_and_a_word(tmp_path, command):
    db = tmp_path / "a.db"
    cli_output(db, "ingest")
    cli_output(db, "run", "--vocab", "300", "--jobs", "1", "--no-report")
    before = dump(db)
    # Stopped at a known point: the command's first read of the database, whatever it is.
    go = tmp_path / "go"
    os.mkfifo(go)
    paused = "analyzer.store.save_corpus" if command[0] == "ingest" else "analyzer.cli.shown.load_run_data"
    process = RunProcess(*command, "--db", str(db), env={"ANALYZER_TEST_PAUSE_AT": f"{paused}:{go}"})
    process.wait_for("analyzer-test: paused before")
    os.kill(process.pid, signal.SIGTERM)
    code, _, stderr = process.finish()
    assert code == 130, stderr
    assert "Interrupted (SIGTERM): nothing was stored, and no file was replaced." in stderr
    assert dump(db) == before


@pytest.mark.slow
@pytest.mark.parametrize("command", [["export", "1"], ["export", "1", "--units"],
                                     ["export", "1", "--format", "csv", "--units"],
                                     ["corpus", "harbour_town", "--texts"], ["merges", "1", "--top", "2000"],
                                     ["show", "1"], ["show", "1", "--json"]])
def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(tmp_path, command):
    db = tmp_path / "a.db"
    cli_output(db, "ingest")
    cli_output(db, "run", "--vocab", "300,2000", "--jobs", "1", "--no-report")
    process = subprocess.Popen(["analyzer", *command, "--db", str(db)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    process.stdout.read(10)
    process.stdout.close()  # as `| head -c 10` does
    assert process.wait(timeout=WAIT) == 0
    assert process.stderr.read() == b""


# 19. A WAL database where nothing may be written is still read.

def test_a_database_in_a_read_only_folder_is_read(db, immutable):
    assert invoke(db, "run", "--vocab", "300", "--jobs", "1", "--no-report").exit_code == 0
    gc.collect()  # the commands' connections, closed: SQLite removes the -wal and -shm files
    assert not Path(f"{db}-wal").exists()  # so SQLite must make them to read it
    immutable(db.parent)
    for command in (["runs"], ["show", "1"], ["export", "1"], ["corpora"]):
        result = invoke(db, *command)
        assert result.exit_code == 0, (command, result.output)
    result = invoke(db, "run", "--vocab", "300", "--jobs", "1", "--no-report")
    assert result.exit_code == 1 and "is read-only" in result.output


@pytest.mark.slow
def test_a_database_on_a_read_only_mount_is_read(small_disk):
    db = small_disk.path / "a.db"
    assert RunProcess("ingest", "--db", str(db)).finish()[0] == 0  # no connection left here
    done = subprocess.run(["mount", "-o", "remount,ro", str(small_disk.path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot remount read-only here: {done.stderr.decode().strip()}")
    try:
        assert "harbour_town" in cli_output(db, "corpora", "--json")
        result = invoke(db, "ingest", "--name", "again")
        assert result.exit_code == 1 and "read-only" in result.output
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk.path)], capture_output=True)


# 20. A corpus file is never skipped without a word.

def test_a_language_file_ending_in_capitals_is_read_and_others_are_named(db, tmp_path):
    folder = tmp_path / "caps"
    folder.mkdir()
    (folder / "eng_Latn.TXT").write_text("one\ntwo\n")
    (folder / "fra_Latn.txt").write_text("un\ndeux\n")
    (folder / "deu_Latn.md").write_text("eins\nzwei\n")
    (folder / "README.txt").write_text("about\n")
    result = invoke(db, "ingest", folder)
    assert result.exit_code == 0, result.output
    assert "2 languages" in result.output and "Not read (not <lang>.txt): deu_Latn.md" in result.output


# 21. Messages that name the right thing.

def test_messages_name_what_is_wrong(db, tmp_path):
    ranks = tmp_path / "mine.tiktoken"
    ranks.write_text("garbage\n")
    result = invoke(db, "run", "--tokenizer", f"{ranks}@cl100k_base", "--no-report")
    text = " ".join(result.output.split())
    assert result.exit_code == 1 and f"{ranks}: line 1 is not" in text and "openaipublic" not in text

    nul = tmp_path / "nul"
    nul.mkdir()
    (nul / "eng_Latn.txt").write_bytes(b"ab\x00cdefg\n")
    (nul / "fra_Latn.txt").write_text("abcdefgh\n")
    result = invoke(db, "ingest", nul)
    assert result.exit_code == 1 and "not a text file (NUL byte at offset 2)" in result.output

    loop = tmp_path / "loop"
    loop.mkdir()
    (loop / "eng_Latn.txt").write_text("x\n")
    (loop / "a").symlink_to("b")
    (loop / "b").symlink_to("a")
    result = invoke(db, "ingest", loop)
    assert result.exit_code == 1 and "a loop of links" in result.output

    folder = tmp_path / "folder"
    folder.mkdir()
    result = invoke(db, "run", "--tokenizer", f"llama3={folder}", "--no-report")
    assert result.exit_code == 1 and "is a folder; name the file" in " ".join(result.output.split())

    table = tmp_path / "pt.tsv"
    table.write_text("pt-BR\tpt-PT\nolá\tolá\n")
    result = invoke(db, "ingest", table)
    assert result.exit_code == 1
    assert "the columns 'pt-BR' and 'pt-PT' are both por_Latn" in " ".join(result.output.split())
