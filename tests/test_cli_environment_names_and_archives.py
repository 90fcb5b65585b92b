"""The command line's and the readers' part of reliability round 6 (issue 68): the environment
is input too (any output encoding, locale or terminal width works), names that are markup
(`:smile:`), archives whose names cannot be unpacked, ids and numbers a reader could not hold,
one language under two names, and output files replaced only when asked."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers import TINY, corpus_folder, dump, invoke, said

TEMPORARY = "analyzer-zip-"
"""What the temporary folder a zip is unpacked into is called: never in a message."""




@pytest.fixture(scope="module")
def named_db(tmp_path_factory):
    """A corpus whose name is not ASCII and is an emoji's code, and one run of it."""
    root = tmp_path_factory.mktemp("named")
    db = root / "a.db"
    assert invoke(db, "ingest", corpus_folder(root / "café:smile:"), "--name",
                  "café:smile:").exit_code == 0
    assert invoke(db, "run", "--vocab", "300", "--jobs", "1", "--no-report").exit_code == 0
    return db


PRINTING = [["corpora"], ["corpus", "café:smile:"], ["runs"], ["show", "1"],
            ["show", "1", "--intervals"], ["tokenize", "1", "кот ☕ café"], ["merges", "1"],
            ["corpus", "café:smile:", "--texts"], ["corpus", "nope☕"]]
"""Commands that print names and texts from the data (the last one an error that names one)."""


@pytest.mark.parametrize("charset", ["ascii", "latin-1", "cp437"])
def test_any_output_encoding_writes_escapes_not_a_bug(named_db, charset):
    """Issue 68, item 6: PYTHONIOENCODING=ascii `corpora` and latin-1 `tokenize` ended in
    UnicodeEncodeError, exit 70. What the encoding lacks is written as an escape."""
    from typer.testing import CliRunner

    from analyzer.cli import app

    for command in PRINTING:
        result = CliRunner(charset=charset).invoke(app, [*command, "--db", str(named_db)])
        assert result.exit_code in (0, 1), (command, result.output, result.exception)
        assert "bug" not in result.output, (command, result.output)
    shown = CliRunner(charset="latin-1").invoke(app, ["tokenize", "1", "кот ☕", "--db",
                                                      str(named_db)])
    assert "\\u043a" in shown.stdout  # кот's к, as an escape


@pytest.mark.slow
@pytest.mark.parametrize("environment", [
    {"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "latin-1:strict"},
    {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}, {"LC_ALL": "xx_YY.UTF-8"},
])
def test_any_encoding_or_locale_of_the_environment_works(named_db, environment):
    """The real process, as a user's shell starts it. In the locale C without coercion (ASCII)
    the text to tokenize, typed in UTF-8, is read as typed (it was refused: "character 0 is
    the byte 0xd0, not UTF-8")."""
    env = {**os.environ, **environment}
    for variable in ("COLUMNS", "LINES", "PYTHONIOENCODING"):
        if variable not in environment:
            env.pop(variable, None)
    for command, shown in ((["corpora"], b"caf"),
                           (["tokenize", "1", "кот ☕ café"], b"tokens for 16 bytes")):
        done = subprocess.run([sys.executable, "-m", "analyzer", *command, "--db", str(named_db)],
                              env=env, capture_output=True, timeout=300)
        assert done.returncode == 0, (environment, command, done.stderr)
        assert shown in done.stdout, done.stdout


def test_a_name_that_is_an_emoji_s_code_is_printed_as_written(named_db, tmp_path):
    """Issue 68, item 9: `:smile:` in a corpus's, source's or file's name printed as 😄 (rich's
    emoji codes), in tables, lines and notes alike."""
    for command in (["corpora"], ["corpus", "café:smile:"], ["runs"], ["show", "1"],
                    ["show", "1", "--format", "markdown"]):
        result = invoke(named_db, *command)
        assert result.exit_code == 0, result.output
        assert ":smile:" in result.output and "😄" not in result.output, (command, result.output)
    source = tmp_path / ":smile:"
    source.mkdir()
    (source / "eng_Latn.jsonl").write_text('{"text": "hello"}\n["no object"]\n')
    result = invoke(tmp_path / "s.db", "sources", "add", ":thumbsup:", source)
    assert result.exit_code == 0, result.output
    assert "'':thumbsup:'" in result.output.replace("'", "''") and ":smile:/eng_Latn.jsonl" in \
        result.output and "😄" not in result.output and "👍" not in result.output


def test_prose_on_standard_output_fits_the_width_and_never_cuts_a_word(named_db, tmp_path):
    """Issue 68, item 9: `runs` printed a stored failure (a memory refusal, ~490 characters)
    as one line, and `show --intervals` ran to 84 columns at 80. At 80 columns and in a pipe,
    every line fits, but for a word (a path) longer than the width, kept whole."""
    from analyzer.store import RunStatus, mark_run, open_db

    deep = "/" + "/".join(["a-folder-with-a-long-name"] * 4) + "/eng_Latn.txt"
    long_error = ("the run needs about 1.2 GB with --jobs 2 (its two largest jobs at once), and "
                  "this process may have 1.0 GB (the least of its cgroup's limit, ulimit -v and "
                  "MemAvailable); ways out: --jobs 1 (about 0.8 GB), --min-chunk-count 2 (about "
                  f"0.6 GB), or a smaller --train-bytes; the source's file {deep} was read. ") * 2
    db = tmp_path / "a.db"
    with sqlite3.connect(named_db) as source, sqlite3.connect(db) as copy:
        source.backup(copy)
    assert invoke(db, "run", "--vocab", "260", "--jobs", "1", "--no-report").exit_code == 0
    mark_run(open_db(db), 2, RunStatus.FAILED, long_error)
    for columns in (None, "80"):
        for command in (["runs"], ["show", "1", "--intervals"], ["corpus", "café:smile:"],
                        ["merges", "1"]):
            result = invoke(db, *command, env={"COLUMNS": columns, "LINES": None})
            assert result.exit_code == 0, result.output
            wide = [line for line in result.stdout.splitlines()
                    if len(line) > 80 and len(line.split()) > 1]
            assert wide == [], (command, wide)
        runs = invoke(db, "runs", env={"COLUMNS": columns}).stdout
        assert deep in runs.splitlines() and " ".join(runs.split()).count(deep) == 2, runs


def test_show_intervals_fit_80_columns_with_a_production_tokenizer(tmp_path):
    from helpers import resolve_or_skip

    resolve_or_skip("cl100k_base")
    db = tmp_path / "a.db"
    assert invoke(db, "ingest").exit_code == 0
    assert invoke(db, "run", "--vocab", "300,400", "-t", "cl100k_base", "--jobs", "1",
                  "--no-report").exit_code == 0
    shown = invoke(db, "show", "1", "--intervals", env={"COLUMNS": None}).stdout
    assert "[" in shown and max(len(line) for line in shown.splitlines()) <= 80, shown


def test_the_catalog_s_notes_fit_80_columns():
    from typer.testing import CliRunner

    from analyzer.cli import app

    listed = CliRunner().invoke(app, ["tokenizers"], env={"COLUMNS": None}).stdout
    wide = [line for line in listed.splitlines() if len(line) > 80 and len(line.split()) > 1]
    assert "framing:" in listed and wide == [], wide


# Archives.

def zipped(path: Path, entries: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in entries.items():
            archive.writestr(name, text)
    return path


@pytest.mark.parametrize("entries, said_of_it", [
    ({"d/eng_Latn.txt": "one\n", "d/eng_Latn.txt/fra_Latn.txt": "un\n"},
     "d/eng_Latn.txt is a file, and the entry d/eng_Latn.txt/fra_Latn.txt is inside it"),
    ({"d/eng_Latn.txt/fra_Latn.txt": "un\n", "d/eng_Latn.txt": "one\n"},
     "d/eng_Latn.txt is a file, and the entry d/eng_Latn.txt/fra_Latn.txt is inside it"),
    ({"d/eng_Latn.txt": "one\n", "d/" + "x" * 300 + ".txt": "un\n"},
     "has a name longer than this system allows (304 bytes, at most 255)"),
    ({"d/eng_Latn.txt": "one\n", "d/" + "x" * 300 + "/fra_Latn.txt": "un\n"},
     "has a name longer than this system allows (300 bytes, at most 255)"),
    ({"d/eng_Latn.txt": "one\n", "/".join(["y" * 250] * 20) + "/fra_Latn.txt": "un\n"},
     "has a path longer than this system allows"),
])
def test_a_zip_whose_names_cannot_be_unpacked_is_refused_naming_the_zip_and_entry(
        tmp_path, entries, said_of_it):
    """Issue 68, item 6: a file and a folder of one name, or a name longer than the system
    allows, ended `ingest` as a bug (FileExistsError, ENAMETOOLONG) quoting the temporary
    folder. They are the corpus error, naming the zip and the entry."""
    archive = zipped(tmp_path / "c.zip", entries)
    db = tmp_path / "a.db"
    result = invoke(db, "ingest", archive)
    assert result.exit_code == 1, (result.output, result.exception)
    assert f"{archive}: " in said(result) and said_of_it in said(result), said(result)
    assert TEMPORARY not in result.output
    assert not db.exists() or "c" not in invoke(db, "corpora", "--json").stdout


def test_unpacking_errors_are_the_corpus_error_for_every_face(tmp_path):
    """The service maps the corpus error; it must be that, not an OSError."""
    from analyzer.corpus import CorpusError
    from analyzer.corpus.archives import unpack_zip

    archive = zipped(tmp_path / "c.zip", {"d/a.txt": "x", "d/a.txt/b.txt": "y"})
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises(CorpusError) as raised:
        unpack_zip(archive, into, name="upload.zip")
    assert raised.value.file == "upload.zip" and raised.value.value == "d/a.txt/b.txt"
    assert list(into.iterdir()) == []  # checked before anything was written


def test_a_zip_s_every_message_names_the_zip(tmp_path):
    """Issue 68, item 9: a reader naming a file by its name alone (`misaligned: ... eng_Latn.txt:
    1`) did not say which zip it was in."""
    archive = zipped(tmp_path / "c.zip", {"d/eng_Latn.txt": "one\ntwo\n", "d/fra_Latn.txt": "un\n"})
    result = invoke(tmp_path / "a.db", "ingest", archive)
    assert result.exit_code == 1 and said(result).startswith(f"Error: {archive}: misaligned")
    assert TEMPORARY not in result.output


# Ids and numbers a reader could not hold.

def flores_plus(folder: Path, ids: list, suffix: str) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    (folder / "devtest").mkdir(parents=True)
    for lang, text in (("eng_Latn", "hello"), ("fra_Latn", "bonjour")):
        path = folder / "devtest" / f"{lang}.{suffix}"
        if suffix == "parquet":
            pq.write_table(pa.table({"id": ids, "text": [f"{text} {i}" for i in range(len(ids))]}),
                           path)
        else:
            path.write_text("".join(json.dumps({"id": unit, "text": f"{text} {i}"}) + "\n"
                                    for i, unit in enumerate(ids)))
    return folder


@pytest.mark.parametrize("suffix", ["parquet", "jsonl"])
@pytest.mark.parametrize("ids, kind", [([[1], [2]], "a list ([1])"),
                                       ([{"a": 1}, {"a": 2}], "an object ({'a': 1})"),
                                       ([1.5, 2.5], "a fraction (1.5)")])
def test_flores_plus_ids_that_are_no_id_are_refused_by_row(tmp_path, suffix, ids, kind):
    """Issue 68, item 6: FLORES+ Parquet whose ids are lists ended in `TypeError: unhashable
    type: 'list'`, exit 70."""
    folder = flores_plus(tmp_path / "flores", ids, suffix)
    result = invoke(tmp_path / "a.db", "ingest", folder, "--format", "flores_plus")
    assert result.exit_code == 1, (result.output, result.exception)
    assert f"eng_Latn.{suffix}: row 1: its id is {kind}, not a whole number or a text" \
        in said(result)


def test_whole_number_ids_stored_as_floats_are_read(tmp_path):
    folder = flores_plus(tmp_path / "flores", [1.0, 2.0], "parquet")
    result = invoke(tmp_path / "a.db", "ingest", folder, "--format", "flores_plus")
    assert result.exit_code == 0, result.output


BIG = "9" * 5001
"""A number of more digits than Python reads from text (4,300): valid JSON all the same."""


def test_a_number_too_long_to_read_is_said_as_such_in_every_json_reader(tmp_path):
    """Issue 68, item 9: a 5,001-digit JSON integer was called "not a JSON object" (a source),
    or ended `ingest` in a ValueError, exit 70 (a corpus's JSON Lines)."""
    expected = "a number of 5,001 digits, more than the 4,300 that can be read"
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(f'{{"eng_Latn": "a", "fra_Latn": "b", "id": {BIG}}}\n')
    result = invoke(tmp_path / "a.db", "ingest", corpus)
    assert result.exit_code == 1 and f"{corpus}: line 1: {expected}" in said(result), said(result)
    flores = flores_plus(tmp_path / "flores", [1], "jsonl")
    (flores / "devtest" / "fra_Latn.jsonl").write_text(f'{{"id": {BIG}, "text": "x"}}\n')
    result = invoke(tmp_path / "a.db", "ingest", flores, "--format", "flores_plus")
    assert result.exit_code == 1 and f"fra_Latn.jsonl: line 1: {expected}" in said(result)
    source = tmp_path / "src"
    source.mkdir()
    (source / "eng_Latn.jsonl").write_text(f'{{"text": "hello there"}}\n{{"n": {BIG}}}\n')
    result = invoke(tmp_path / "s.db", "sources", "add", "src", source)
    assert result.exit_code == 0 and f"eng_Latn.jsonl: line 2 holds {expected}" in said(result)
    assert "not a JSON object" not in said(result)


# One language under two names.

@pytest.mark.parametrize("names", [("eng.txt", "en.txt"), ("eng_Latn.txt", "en.jsonl"),
                                   ("eng_Latn/a.txt", "eng.txt")])
def test_a_source_folder_naming_one_language_twice_is_refused_naming_both(tmp_path, names):
    """Issue 68, item 7: a source folder holding eng.txt and en.txt was taken as one language,
    without a word."""
    folder = tmp_path / "src"
    for name in (*names, "fra.txt"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text('{"text": "hello"}\n' if name.endswith("jsonl") else "hello\n")
    db = tmp_path / "a.db"
    assert invoke(db, "ingest").exit_code == 0
    before = dump(db)
    result = invoke(db, "sources", "add", "src", folder)
    assert result.exit_code == 1, result.output
    first, second = sorted(folder / name.split("/")[0] for name in names)
    assert f"{first} and {second} are both eng_Latn" in said(result), said(result)
    assert dump(db) == before


def test_one_language_s_files_under_one_name_are_still_taken_together(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "eng.txt").write_text("hello\n")
    (folder / "eng.jsonl").write_text('{"text": "there"}\n')
    result = invoke(tmp_path / "a.db", "sources", "add", "src", folder)
    assert result.exit_code == 0 and "2 files" in said(result), said(result)


def test_a_corpus_folder_naming_one_language_twice_is_refused_naming_both(tmp_path):
    folder = corpus_folder(tmp_path / "c", {"eng": ["a", "b"], "en": ["c", "d"], "fra": ["e", "f"]})
    result = invoke(tmp_path / "a.db", "ingest", folder)
    assert result.exit_code == 1 and "en.txt and eng.txt are both eng_Latn" in said(result)


# Output files.

def test_export_names_files_without_this_machine_s_folders_unless_asked(tmp_path):
    """Issue 68, item 8: `export` wrote a production tokenizer's file with its folders under
    site-packages (a machine's path, published with the export); `results` hid them."""
    from helpers import resolve_or_skip

    resolve_or_skip("cl100k_base")
    db = tmp_path / "a.db"
    assert invoke(db, "ingest").exit_code == 0
    assert invoke(db, "run", "--vocab", "300", "-t", "cl100k_base", "--jobs", "1",
                  "--no-report").exit_code == 0
    shared = json.loads(invoke(db, "export", "1").stdout)
    sources = [v["source"] for v in shared["vocabularies"] if v["source"]]
    sources += [t["source"] for t in shared["token_report"]["tokenizers"].values()]
    assert len(sources) == 2 and all("cl100k_base.tiktoken" in s for s in sources), sources
    from analyzer.files import without_local_paths

    assert all(without_local_paths(source) == source for source in sources), sources  # no folder
    full = json.loads(invoke(db, "export", "1", "--full-paths").stdout)
    assert any(without_local_paths(v["source"]) != v["source"]
               for v in full["vocabularies"] if v["source"])


@pytest.mark.parametrize("command", [["export", "1"], ["corpus", "tiny", "--texts"]])
def test_an_output_file_is_replaced_only_when_asked(run_db_copy, tmp_path, command):
    """Issue 68, item 9: `export --out FILE` replaced a file without a word, where `results`
    asks for --replace."""
    out = tmp_path / "mine.json"
    out.write_text("my own file\n")
    refused = invoke(run_db_copy, *command, "--out", out)
    assert refused.exit_code == 1 and f"--out {out} is there already; pass --replace" \
        in said(refused), said(refused)
    assert out.read_text() == "my own file\n"
    replaced = invoke(run_db_copy, *command, "--out", out, "--replace")
    assert replaced.exit_code == 0, replaced.output
    assert out.read_text() != "my own file\n"
    new = tmp_path / "new.json"
    assert invoke(run_db_copy, *command, "--out", new).exit_code == 0 and new.exists()


@pytest.fixture
def run_db_copy(tmp_path):
    db = tmp_path / "r.db"
    corpus = corpus_folder(tmp_path / "tiny")
    assert invoke(db, "ingest", corpus).exit_code == 0
    assert invoke(db, "run", "--vocab", "300", "--jobs", "1", "--no-report").exit_code == 0
    return db


@pytest.mark.parametrize("command", [["results", "1"], ["report", "1"]])
def test_a_link_to_nothing_as_the_output_folder_is_said(run_db_copy, tmp_path, command):
    """Issue 68, item 9: a dangling link given to `results --out` answered "File exists"."""
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "gone" / "away")
    result = invoke(run_db_copy, *command, "--out", link)
    assert result.exit_code == 1
    assert f"--out {link} is a link to {tmp_path / 'gone' / 'away'}, which does not exist" \
        in said(result), said(result)
    assert "File exists" not in result.output


def test_a_link_to_nothing_as_the_export_file_writes_where_it_points(run_db_copy, tmp_path):
    link = tmp_path / "out.json"
    link.symlink_to(tmp_path / "there.json")
    assert invoke(run_db_copy, "export", "1", "--out", link).exit_code == 0
    assert json.loads((tmp_path / "there.json").read_text())["id"] == 1 and link.is_symlink()
    gone = tmp_path / "gone.json"
    gone.symlink_to(tmp_path / "no" / "such" / "x.json")
    result = invoke(run_db_copy, "export", "1", "--out", gone)
    assert result.exit_code == 1 and "which does not exist" in said(result)


# Sources that cannot be read whole.

def test_a_broken_stream_refused_by_a_run_is_not_said_skipped(tmp_path):
    """Issue 68, item 9: a truncated gzip was refused with "the rest of the file was skipped
    (0 documents could not be read ...)"."""
    source = tmp_path / "src"
    source.mkdir()
    data = gzip.compress(("hello there my friend\n" * 5000).encode())
    (source / "eng_Latn.txt.gz").write_bytes(data[:len(data) // 2])
    (source / "fra_Latn.txt").write_text("bonjour mon ami\n" * 100)
    db = tmp_path / "a.db"
    assert invoke(db, "ingest").exit_code == 0
    assert invoke(db, "sources", "add", "src", source).exit_code == 0
    run = ["run", "--vocab", "300", "--train-on", "src", "--langs", "eng_Latn,fra_Latn",
           "--no-report", "--jobs", "1"]
    refused = invoke(db, *run)
    message = said(refused)
    assert refused.exit_code == 1 and "its gzip stream is broken after" in message, message
    assert "skipped" not in message and "0 documents" not in message, message
    assert "--skip-invalid uses the text before the break" in message
    assert invoke(db, *run, "--skip-invalid").exit_code == 0


@pytest.mark.slow
def test_a_full_disk_under_the_chunk_cache_names_the_file(small_disk, tmp_path):
    """Issue 68, item 9: a full disk while the chunk counts were written said "cannot write
    the output": which file, and that the disk is full."""
    from helpers import RunProcess

    source = tmp_path / "src"
    source.mkdir()
    for lang in ("eng_Latn", "fra_Latn"):
        (source / f"{lang}.txt").write_text("".join(f"{lang} word{i} other{i * 7}\n"
                                                    for i in range(3000)))
    db = tmp_path / "a.db"
    assert invoke(db, "ingest").exit_code == 0
    assert invoke(db, "sources", "add", "src", source).exit_code == 0
    (small_disk.path / "chunks").mkdir()
    (tmp_path / "a.db.chunks").symlink_to(small_disk.path / "chunks")
    small_disk.fill()
    code, _, stderr = RunProcess("run", "--vocab", "300", "--train-on", "src", "--langs",
                                 "eng_Latn,fra_Latn", "--no-report", "--jobs", "1",
                                 "--db", str(db)).finish()
    message = " ".join(stderr.split())
    assert code == 1, stderr
    assert "the disk is full" in message and "the output" not in message, message
    assert f"cannot write {tmp_path / 'a.db.chunks'}/" in message and ".arrow" in message, message


# Found by attacking the command line again.

@pytest.mark.parametrize("name, format", [("c.tsv.gz", None), ("c.tsv.gz", "tsv"),
                                          ("c.jsonl.zst", None), ("eng_Latn.txt", None)])
def test_a_compressed_corpus_file_is_said_compressed(tmp_path, name, format):
    """`ingest c.tsv.gz` said "cannot tell the format from the name; pass --format", and with
    --format tsv "not a text file (NUL byte at offset 3)": neither says what to do."""
    import zstandard

    data = b"eng_Latn\tfra_Latn\na\tb\n"
    packed = gzip.compress(data) if not name.endswith(".zst") else \
        zstandard.ZstdCompressor().compress(data)
    if name == "eng_Latn.txt":  # a folder's file, compressed under a plain name
        folder = corpus_folder(tmp_path / "c", {"fra_Latn": ["b"]})
        (folder / name).write_bytes(gzip.compress(b"a\n"))
        path, kind = folder, "gzip-compressed"
    else:
        path, kind = tmp_path / name, "compressed"
        path.write_bytes(packed)
    result = invoke(tmp_path / "a.db", "ingest", path, *(["--format", format] if format else []))
    assert result.exit_code == 1, result.output
    assert kind in said(result) and "decompress it first" in said(result), said(result)


def test_a_folder_named_as_a_language_s_file_is_said_a_folder(tmp_path):
    """A folder called eng_Latn.txt beside fra_Latn.txt was passed over: "a parallel corpus
    needs two or more languages, found 1", of a folder that seems to hold two."""
    folder = corpus_folder(tmp_path / "c", {"fra_Latn": ["un"], "deu_Latn": ["eins"]})
    (folder / "eng_Latn.txt").mkdir()
    result = invoke(tmp_path / "a.db", "ingest", folder)
    assert result.exit_code == 1
    assert f"{folder / 'eng_Latn.txt'} is a folder, not a file of text" in said(result)


def test_numbers_of_too_many_digits_in_counts_and_prices_are_refused_by_line(tmp_path):
    """A 5,001-digit count in `run --counts`, or number in `--prices`, ended in ValueError
    (int() refuses more than 4,300 digits), a bug exit."""
    db = tmp_path / "a.db"
    assert invoke(db, "ingest", corpus_folder(tmp_path / "tiny")).exit_code == 0
    counts = tmp_path / "counts.csv"
    counts.write_text("unit,lang,tokens\n" + "".join(
        f"{unit},{lang},{BIG if unit == 0 else 5}\n" for unit in range(6) for lang in TINY))
    result = invoke(db, "run", "--vocab", "300", "--counts", f"mine={counts}", "--jobs", "1",
                    "--no-report")
    assert result.exit_code == 1, (result.output, result.exception)
    assert "line 2: tokens 99999999999999999999... (5,001 digits) is above 4,294,967,295" \
        in said(result)
    assert invoke(db, "run", "--vocab", "300", "--jobs", "1", "--no-report").exit_code == 0
    prices = tmp_path / "prices.toml"
    prices.write_text(f"x = {BIG}\n")
    result = invoke(db, "report", "1", "--prices", prices, "--out", tmp_path / "reports")
    assert result.exit_code == 1, (result.output, result.exception)
    assert f"--prices {prices}: a number of 5,001 digits, more than the 4,300" in said(result)


LONG = "z" * 300
"""A name of 300 bytes: longer than a file's name may be (255 on most systems)."""


@pytest.mark.parametrize("command", [
    ["corpora", "--db", LONG + "/a.db"], ["ingest", "--db", LONG + "/a.db"], ["ingest", LONG + ".tsv"],
    ["sources", "add", "s", LONG + ".txt"], ["export", "1", "--out", LONG + ".json"],
    ["report", "1", "--out", LONG], ["results", "1", "--out", LONG],
    ["corpus", "tiny", "--texts", "--out", LONG + ".csv"]])
def test_a_path_longer_than_the_system_allows_is_said(run_db_copy, tmp_path, command):
    """A name of 300 bytes (a database, a corpus, a source, an output) ended in OSError: File
    name too long, a bug exit."""
    from typer.testing import CliRunner

    from analyzer.cli import app

    arguments = [str(tmp_path / part) if LONG in part else part for part in command]
    if "--db" not in command:
        arguments += ["--db", str(run_db_copy)]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 1, (result.output, result.exception)
    assert "a name longer than this system allows" in said(result)


def test_a_tokenizer_that_gives_a_text_no_token_is_refused_before_it_is_stored(tmp_path):
    """A tokenizer.json of an empty vocabulary counted 0 tokens for every text: the run was
    stored, and every later `show` ended in ZeroDivisionError, a bug exit."""
    pytest.importorskip("tokenizers")
    db = tmp_path / "a.db"
    assert invoke(db, "ingest", corpus_folder(tmp_path / "tiny")).exit_code == 0
    empty = tmp_path / "empty.json"
    empty.write_text('{"model": {"type": "BPE", "vocab": {}, "merges": []}}')
    result = invoke(db, "run", "--vocab", "300", "--tokenizer", empty, "--jobs", "1",
                    "--no-report")
    assert result.exit_code == 1, (result.output, result.exception)
    assert "--tokenizer empty.json: it gives eng_Latn's unit 1 no token at all" in said(result)
    assert json.loads(invoke(db, "runs", "--json").stdout)[0]["status"] == "failed"
