"""`analyzer ingest`, `corpora` and `corpus` through the CLI; every bad input leaves the
database exactly as it was."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer.cli import app
from helpers import RunProcess, dump

runner = CliRunner()


@pytest.fixture
def sample_db(tmp_path):
    """A database holding the sample corpus, so 'unchanged' means something."""
    path = tmp_path / "a.db"
    result = runner.invoke(app, ["ingest", "--db", str(path)])
    assert result.exit_code == 0, result.output
    return path


def folder(tmp_path, files: dict[str, bytes | str], name="c"):
    target = tmp_path / name
    target.mkdir()
    for filename, content in files.items():
        data = content.encode("utf-8") if isinstance(content, str) else content
        (target / filename).write_bytes(data)
    return target


def ingest(sample_db, *args):
    return runner.invoke(app, ["ingest", *map(str, args), "--db", str(sample_db)])


def test_ingest_the_sample_prints_the_language_table(sample_db):
    result = runner.invoke(app, ["corpus", "harbour_town", "--db", str(sample_db)])
    assert result.exit_code == 0, result.output
    for expected in ("eng_Latn", "English", "tha_Thai", "Thai", "20"):
        assert expected in result.output


def test_same_content_again_is_a_no_op(sample_db):
    before = dump(sample_db)
    result = runner.invoke(app, ["ingest", "--db", str(sample_db)])
    assert result.exit_code == 0
    assert "already ingested" in result.output
    assert dump(sample_db) == before


def test_same_name_other_content_needs_replace(sample_db, tmp_path):
    other = folder(tmp_path, {"en.txt": "a\nb\n", "de.txt": "A\nB\n"}, name="harbour_town")
    before = dump(sample_db)
    result = ingest(sample_db, other)
    assert result.exit_code == 1
    assert "already exists" in result.output and "--replace" in result.output
    assert dump(sample_db) == before
    result = ingest(sample_db, other, "--replace")
    assert result.exit_code == 0, result.output
    data = json.loads(runner.invoke(app, ["corpus", "harbour_town", "--db", str(sample_db), "--json"]).stdout)
    assert data["units"] == 2 and data["languages"] == ["deu_Latn", "eng_Latn"]


BAD_INPUTS = {
    "not utf-8": ({"en.txt": b"ok\n", "de.txt": b"gr\xfc\xdf\n"}, ["de.txt", "byte offset 2"]),
    "misaligned": ({"en.txt": "a\nb\nc\n", "de.txt": "A\nB\n"}, ["misaligned", "en.txt: 3", "de.txt: 2"]),
    "empty unit": ({"en.txt": "a\n\nc\n", "de.txt": "A\nB\nC\n"}, ["line 2 is empty in en.txt", "--skip-empty-units"]),
    "unknown code": ({"en.txt": "a\n", "english-ish.txt": "b\n"}, ["unknown language code 'english-ish'"]),
    "code is a name": ({"en.txt": "a\n", "russian.txt": "b\n"}, ["'russian'", "did you mean rus_Cyrl"]),
    "two columns, one language": ({"en.txt": "a\n", "eng_Latn.txt": "b\n"}, ["both eng_Latn"]),
    "one language": ({"en.txt": "a\n"}, ["two or more languages"]),
    "not text": ({"en.txt": "a\n", "de.txt": b"\x00\x01\x02"}, ["de.txt", "not a text file"]),
    "no units": ({"en.txt": "", "de.txt": ""}, ["no units"]),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_folder_input_is_refused_and_changes_nothing(sample_db, tmp_path, case):
    files, messages = BAD_INPUTS[case]
    before = dump(sample_db)
    result = ingest(sample_db, folder(tmp_path, files))
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())  # undo rich's line wrapping
    for message in messages:
        assert message in output
    assert dump(sample_db) == before


BAD_FILES = {
    "short.tsv": ("en\tde\nA\tB\nC\n", ["short.tsv", "line 3 has 1 cells, the header has 2"]),
    "broken.jsonl": ('{"en": "a", "de": "b"}\n{"en": "c"}\n', ["line 2", "missing de"]),
    "notjson.jsonl": ('{"en": "a", "de": "b"}\nnope\n', ["line 2: not JSON"]),
    "missing.tmx": ('<tmx><body><tu tuid="7"><tuv xml:lang="en"><seg>a</seg></tuv>'
                    '<tuv xml:lang="de"><seg>b</seg></tuv></tu><tu tuid="8"><tuv xml:lang="en">'
                    '<seg>c</seg></tuv></tu></body></tmx>', ["tu 2 (tuid 8) has no de"]),
    "bomb.tmx": ('<?xml version="1.0"?><!DOCTYPE tmx [<!ENTITY a "aaaaaaaaaa">'
                 '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><tmx><body><tu><tuv xml:lang="en">'
                 '<seg>&b;</seg></tuv></tu></body></tmx>', ["refused unsafe XML"]),
    "broken.tmx": ("<tmx><body><tu>", ["not well-formed XML at line 1"]),
    "empty.csv": ("", ["empty file"]),
    "unknown.xyz": ("whatever", ["cannot tell the format", "--format"]),
}


@pytest.mark.parametrize("filename", BAD_FILES)
def test_bad_file_input_is_refused_and_changes_nothing(sample_db, tmp_path, filename):
    content, messages = BAD_FILES[filename]
    path = tmp_path / filename
    path.write_text(content, encoding="utf-8")
    before = dump(sample_db)
    result = ingest(sample_db, path)
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())
    for message in messages:
        assert message in output
    assert dump(sample_db) == before


def test_missing_path_and_empty_folder(sample_db, tmp_path):
    result = ingest(sample_db, tmp_path / "nowhere")
    assert result.exit_code == 1 and "no such file or folder" in result.output
    (tmp_path / "empty").mkdir()
    result = ingest(sample_db, tmp_path / "empty")
    assert result.exit_code == 1 and "no corpus files here (found: nothing)" in result.output


def test_skip_empty_units_and_nfc_say_what_they_did(sample_db, tmp_path):
    source = folder(tmp_path, {"en.txt": "Cafe\u0301\n\nTea\n", "fr.txt": "Café\nLait\nThé\n"})
    result = ingest(sample_db, source, "--skip-empty-units", "--nfc", "--name", "drinks")
    assert result.exit_code == 0, result.output
    assert "Dropped 1 unit(s)" in result.output
    assert "NFC normalisation changed 1 unit(s)" in result.output
    data = json.loads(runner.invoke(app, ["corpus", "drinks", "--db", str(sample_db), "--json"]).stdout)
    assert data["units"] == 2 and data["nfc"] is True


def test_paragraph_units_and_explicit_format(sample_db, tmp_path):
    source = folder(tmp_path, {"en.txt": "A a.\nA b.\n\nB.\n", "de.txt": "A.\n\nB.\n"})
    result = ingest(sample_db, source, "--units", "paragraphs", "--format", "folder", "--name", "paras")
    assert result.exit_code == 0, result.output
    data = json.loads(runner.invoke(app, ["corpus", "paras", "--db", str(sample_db), "--json"]).stdout)
    assert data["units"] == 2


def test_corpora_json_lists_every_corpus(sample_db, tmp_path):
    ingest(sample_db, folder(tmp_path, {"en.txt": "a\n", "de.txt": "b\n"}, name="tiny"))
    result = runner.invoke(app, ["corpora", "--db", str(sample_db), "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert [c["name"] for c in data] == ["harbour_town", "tiny"]
    assert set(data[0]) >= {"name", "source", "format", "units", "languages", "bytes", "content_hash"}
    assert data[0]["units"] == 20 and len(data[0]["languages"]) == 12


def test_corpus_detail_json_matches_the_table(sample_db):
    data = json.loads(runner.invoke(app, ["corpus", "harbour_town", "--db", str(sample_db), "--json"]).stdout)
    english = next(s for s in data["language_stats"] if s["lang"] == "eng_Latn")
    table = runner.invoke(app, ["corpus", "harbour_town", "--db", str(sample_db)]).output
    row = next(line for line in table.splitlines() if "eng_Latn" in line)
    assert f"{english['bytes']:,}" in row and f"{english['chars']:,}" in row
    assert sum(s["bytes"] for s in data["language_stats"]) == data["bytes"]


def test_unknown_corpus_and_missing_database(sample_db, tmp_path):
    result = runner.invoke(app, ["corpus", "nope", "--db", str(sample_db)])
    assert result.exit_code == 1 and "harbour_town" in result.output
    result = runner.invoke(app, ["corpora", "--db", str(tmp_path / "none.db")])
    assert result.exit_code == 1 and "no database here yet" in result.output
    assert not (tmp_path / "none.db").exists()


def test_db_path_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ANALYZER_DB", str(tmp_path / "env.db"))
    result = runner.invoke(app, ["ingest"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "env.db").exists()


def bind_socket(path: Path) -> None:
    """A socket file at `path`, named relative to the test's folder (the current one): a
    socket's path may be 107 bytes at most, which a long temporary folder would pass."""
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(os.path.relpath(path))


def make_zero_device(path: Path) -> None:
    """A character device node of the test's own, like /dev/zero (never the machine's /dev)."""
    if os.geteuid() != 0:
        pytest.skip("making device nodes needs root (CI runs as root)")
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 5))


SPECIAL_FILES = {
    "a named pipe": lambda path: os.mkfifo(path),
    "a socket": bind_socket,
    "a character device": make_zero_device,
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", SPECIAL_FILES)
@pytest.mark.parametrize("name", ["fra_Latn.txt", "notes.fifo"])
def test_a_folder_holding_anything_but_regular_files_is_refused_before_reading(sample_db, tmp_path, kind, name):
    """A pipe in a corpus folder would block a read forever: it is refused, named, at once
    (whatever its name: nothing in the folder is read first)."""
    corpus = folder(tmp_path, {"eng_Latn.txt": "one\ntwo\n", "rus_Cyrl.txt": "раз\nдва\n"})
    SPECIAL_FILES[kind](corpus / name)
    before = dump(sample_db)
    result = RunProcess("ingest", str(corpus), "--db", str(sample_db))
    code, stdout, stderr = result.finish()
    assert code == 1, stderr
    assert f"{corpus / name} is {kind}, not a regular file" in stderr.replace("\n", " ")
    assert dump(sample_db) == before


def test_a_dangling_link_in_a_folder_is_named(sample_db, tmp_path):
    corpus = folder(tmp_path, {"eng_Latn.txt": "one\n", "rus_Cyrl.txt": "раз\n"})
    (corpus / "fra_Latn.txt").symlink_to(tmp_path / "gone.txt")
    result = ingest(sample_db, corpus)
    assert result.exit_code == 1 and "fra_Latn.txt is a link to nothing" in result.output


def test_links_to_regular_files_and_sub_folders_are_fine(sample_db, tmp_path):
    corpus = folder(tmp_path, {"eng_Latn.txt": "one\ntwo\n"})
    (tmp_path / "elsewhere.txt").write_text("раз\nдва\n", encoding="utf-8")
    (corpus / "rus_Cyrl.txt").symlink_to(tmp_path / "elsewhere.txt")
    (corpus / "drafts").mkdir()
    result = ingest(sample_db, corpus)
    assert result.exit_code == 0, result.output and "2 languages x 2 units" in result.output


@pytest.mark.parametrize("format, content", [
    ("tsv", "eng_Latn\trus_Cyrl\nthe cat, the dog\tкот, пёс\na mat\tковрик\n"),
    ("csv", 'eng_Latn,rus_Cyrl\n"the cat\tsat",кот\na mat,коврик\n'),
    ("jsonl", '{"eng_Latn": "the cat", "rus_Cyrl": "кот"}\n{"eng_Latn": "a mat", "rus_Cyrl": "коврик"}\n'),
])
def test_a_pipe_given_as_the_corpus_is_read_as_a_stream(sample_db, tmp_path, format, content):
    """`analyzer ingest <(zcat corpus.tsv.gz) --format tsv`: a named pipe, written by another
    process, read to its end; the format is the one given, whatever the name says."""
    pipe = tmp_path / "corpus.data"
    os.mkfifo(pipe)
    writer = threading.Thread(target=lambda: pipe.write_text(content, encoding="utf-8"), daemon=True)
    writer.start()
    result = ingest(sample_db, pipe, "--format", format)
    writer.join(timeout=30)
    assert result.exit_code == 0, result.output
    assert "2 languages x 2 units" in result.output
    name = result.output.split("corpus '")[1].split("'")[0]
    assert name.startswith("stream-")  # a stream has no name: one from its content
    texts = json.loads(runner.invoke(app, ["corpus", name, "--json", "--db", str(sample_db)]).stdout)
    assert texts["units"] == 2


def test_a_stream_needs_a_format_and_a_one_file_format(sample_db, tmp_path):
    pipe = tmp_path / "corpus.tsv"
    os.mkfifo(pipe)
    result = ingest(sample_db, pipe)  # nothing is read: the format is asked for first
    assert result.exit_code == 1 and "is a stream" in result.output and "pass --format" in result.output
    result = ingest(sample_db, pipe, "--format", "moses")
    assert result.exit_code == 1 and "the moses format needs files" in result.output


# Round 3: corpora that were accepted silently wrong, or refused with an internal error.

def jsonl(tmp_path, *lines: str):
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("lines, message", [
    (['{"eng_Latn": "real text", "rus_Cyrl": "текст", "eng_Latn": "OVERRIDE"}'],
     "line 1: the key 'eng_Latn' is given twice in one object"),
    (['{"eng_Latn": "a", "rus_Cyrl": "б"}', '{"eng_Latn": "b", "rus_Cyrl": "в", "id": 1, "id": 2}'],
     "line 2: the key 'id' is given twice"),
    (['{"eng_Latn": "a", "rus_Cyrl": "б", "meta": {"x": 1, "x": 2}}'], "line 1: the key 'x' is given twice"),
    (["{}"], "line 1: no language texts"),
    (['{"id": "u1"}'], "line 1: no language texts"),
    (['{"id": 1, "ID": 2, "eng_Latn": "a", "rus_Cyrl": "б"}'], "line 1: two unit ids ('id', 'ID')"),
    (['{"id": [1], "eng_Latn": "a", "rus_Cyrl": "б"}'], "line 1: the unit id is list"),
    (['{"eng_Latn": NaN, "rus_Cyrl": "б"}'], "line 1: eng_Latn is float, not text"),
    (['{"": "a", "rus_Cyrl": "б"}'], "c.jsonl"),
    (['["eng_Latn", "a"]'], "line 1: expected an object of language: text"),
])
def test_malformed_jsonl_is_refused_naming_the_line(sample_db, tmp_path, lines, message):
    before = dump(sample_db)
    result = ingest(sample_db, jsonl(tmp_path, *lines))
    assert result.exit_code == 1, result.output
    assert message in " ".join(result.output.split()), result.output
    assert "bug" not in result.output and dump(sample_db) == before


def test_id_is_the_unit_id_in_any_case_and_in_every_format(tmp_path):
    """`ID` is Indonesian's code too: in a header or a JSONL key it is the unit id, always."""
    from analyzer.corpus import read_corpus

    table = tmp_path / "c.tsv"
    table.write_text("ID\teng_Latn\trus_Cyrl\nu1\tthe cat\tкот\n", encoding="utf-8")
    lines = jsonl(tmp_path, '{"ID": "u1", "eng_Latn": "the cat", "rus_Cyrl": "кот"}')
    for corpus in (read_corpus(table), read_corpus(lines)):
        assert corpus.texts == {"eng_Latn": ["the cat"], "rus_Cyrl": ["кот"]}
        assert corpus.unit_ids == ["u1"]


@pytest.mark.parametrize("invisible", ["\u200b", "\u200c\u200d", "\u2060", "\u00ad", "\u200b \ufeff\u200e"])
def test_a_unit_of_only_invisible_characters_is_empty(sample_db, tmp_path, invisible):
    corpus = folder(tmp_path, {"eng_Latn.txt": "one\ntwo\n", "rus_Cyrl.txt": f"раз\n{invisible}\n"})
    result = ingest(sample_db, corpus)
    assert result.exit_code == 1
    assert "line 2 is empty in rus_Cyrl.txt (it holds only invisible characters" in " ".join(result.output.split())
    kept = ingest(sample_db, corpus, "--skip-empty-units", "--name", "kept")
    assert kept.exit_code == 0 and "Dropped 1 unit(s)" in kept.output
