"""The command line's part of reliability round 5 (issue 50): byte sizes read exactly, and a
results page that never writes into a folder it was not meant for."""

from __future__ import annotations

import pytest

from analyzer.cli.parsing import parse_bytes
from helpers import invoke


@pytest.mark.parametrize(("text", "number"), [
    ("9223372036854775807", 9_223_372_036_854_775_807),  # the documented maximum, itself
    ("9223372036854775806", 9_223_372_036_854_775_806),  # not rounded through a float
    ("1.5G", 1_500_000_000), ("2g", 2_000_000_000), ("500MB", 500_000_000), ("1.0000005M", 1_000_000),
])
def test_byte_sizes_are_read_exactly(text, number):
    assert parse_bytes(text, "--train-bytes") == number


def test_the_largest_train_bytes_is_accepted_and_one_more_refused_by_its_value(tmp_path):
    db = tmp_path / "a.db"
    assert invoke(db, "ingest").exit_code == 0
    largest = invoke(db, "run", "--train-bytes", "9223372036854775807", "--no-report")
    assert "--train-bytes must be" not in largest.output  # refused for another reason: no source
    more = invoke(db, "run", "--vocab", "300", "--train-bytes", "9223372036854775808")
    assert more.exit_code == 1 and "not 9223372036854775808" in more.output
    for text in ("1e400", "1e99999999999", "nan", "inf", "0.5", "abc", ""):
        result = invoke(db, "run", "--vocab", "300", "--train-bytes", text)
        assert result.exit_code == 1 and "--train-bytes" in result.output, (text, result.output)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    db = tmp_path_factory.mktemp("results") / "a.db"
    assert invoke(db, "ingest").exit_code == 0
    assert invoke(db, "run", "--vocab", "300", "--tokenizer", "cl100k_base", "--jobs", "1",
                  "--no-report").exit_code == 0
    return db


@pytest.mark.slow
def test_results_into_an_empty_folder_name_is_refused(measured, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for empty in ("", "  "):
        result = invoke(measured, "results", "1", "--out", empty)
        assert result.exit_code == 1 and "--out is empty" in result.output, result.output
    assert not any((tmp_path / name).exists() for name in ("index.html", "results.json",
                                                            "report.html"))  # not here


def test_results_replace_a_folder_s_page_only_when_asked(measured, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<h1>my own page</h1>")
    result = invoke(measured, "results", "1", "--out", site)
    assert result.exit_code == 1 and "index.html" in result.output and "--replace" in result.output
    assert (site / "index.html").read_text() == "<h1>my own page</h1>"
    assert not (site / "results.json").exists()
    result = invoke(measured, "results", "1", "--out", site, "--replace")
    assert result.exit_code == 0, result.output
    assert "my own page" not in (site / "index.html").read_text()
    assert (site / "results.json").exists()


@pytest.mark.parametrize("mix", ["eng_Latn=1e308,fra_Latn=1", "eng_Latn=nan,fra_Latn=1",
                                 "eng_Latn=1e-300,fra_Latn=1", "eng_Latn=inf,fra_Latn=1"])
def test_a_mix_share_out_of_range_is_refused_by_its_value(tmp_path, mix):
    from analyzer.runs.errors import RunError
    from analyzer.runs.sample import parse_mix

    with pytest.raises(RunError, match="must be a number from 1e-12 to 1e\\+12"):
        parse_mix(mix)


def test_a_source_name_error_names_the_argument_not_a_flag(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "eng_Latn.txt").write_text("hello\n")
    for name in ("a/b", "..", " "):
        result = invoke(tmp_path / "s.db", "sources", "add", name, source)
        assert result.exit_code == 1 and "the NAME argument" in result.output, result.output
        assert "--name" not in result.output


def test_a_file_where_the_chunk_cache_goes_is_refused_before_counting(tmp_path, monkeypatch):
    import analyzer.runs.counting as counting

    source = tmp_path / "src"
    source.mkdir()
    (source / "eng_Latn.txt").write_text("hello there\n" * 50)
    db = tmp_path / "s.db"
    assert invoke(db, "ingest").exit_code == 0
    assert invoke(db, "sources", "add", "src", source).exit_code == 0
    (tmp_path / "s.db.chunks").write_text("not a folder")
    monkeypatch.setattr(counting, "count_file_into", lambda *a, **k: pytest.fail("counted"))
    result = invoke(db, "run", "--vocab", "300", "--train-on", "src", "--langs", "eng_Latn",
                    "--no-report", "--jobs", "1")
    assert result.exit_code == 1, result.output
    assert "s.db.chunks is a file, not a folder" in " ".join(result.output.split())
    assert "--cache" in result.output


@pytest.mark.parametrize(("file", "content"), [
    ("fra_Latn.txt", ""), ("fra_Latn.txt", "\n\n  \n"), ("fra_Latn.jsonl", ""),
])
def test_a_language_whose_files_hold_no_text_is_refused(tmp_path, file, content):
    source = tmp_path / "src"
    source.mkdir()
    (source / "eng_Latn.txt").write_text("hello there\n")
    (source / file).write_text(content)
    db = tmp_path / "s.db"
    result = invoke(db, "sources", "add", "src", source)
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "no text to train on for fra_Latn" in said and file in said
    assert invoke(db, "sources").output.count("src") == 0  # nothing registered


def test_a_parquet_language_of_no_rows_is_refused(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    source = tmp_path / "src"
    source.mkdir()
    (source / "eng_Latn.txt").write_text("hello there\n")
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), source / "fra_Latn.parquet")
    result = invoke(tmp_path / "s.db", "sources", "add", "src", source)
    assert result.exit_code == 1 and "no text to train on for fra_Latn" in result.output


def test_a_lone_surrogate_in_json_lines_is_invalid_text_named_at_its_line(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "eng_Latn.txt").write_text("hello there\n" * 20)
    (source / "fra_Latn.jsonl").write_text('{"text": "bonjour"}\n{"text": "a\\ud800b"}\n')
    db = tmp_path / "s.db"
    assert invoke(db, "ingest").exit_code == 0
    assert invoke(db, "sources", "add", "src", source).exit_code == 0  # counted, not refused
    run = ["run", "--vocab", "300", "--train-on", "src", "--langs", "eng_Latn,fra_Latn",
           "--no-report", "--jobs", "1"]
    refused = invoke(db, *run)
    said = " ".join(refused.output.split())
    assert refused.exit_code == 1 and "fra_Latn.jsonl: line 2" in said and "surrogate" in said
    skipped = invoke(db, *run, "--skip-invalid")
    assert skipped.exit_code == 0, skipped.output


def test_parquet_with_two_columns_of_one_name_is_refused(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    table = pa.Table.from_arrays([pa.array(["a", "b"]), pa.array(["c", "d"])],
                                 names=["text", "text"])
    source = tmp_path / "src"
    source.mkdir()
    pq.write_table(table, source / "fra_Latn.parquet")
    result = invoke(tmp_path / "s.db", "sources", "add", "src", source)
    assert result.exit_code == 1 and "column 'text' appears more than once" in result.output
    corpus = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["a"]), pa.array(["b"]), pa.array(["c"])],
                                        names=["eng_Latn", "fra_Latn", "fra_Latn"]), corpus)
    result = invoke(tmp_path / "c.db", "ingest", corpus)
    assert result.exit_code == 1 and "appears more than once" in result.output, result.output


def make_special(kind: str, path):
    """A named pipe, a loop of links, or a device node of the test's own (never /dev's)."""
    import os
    import stat

    if kind == "a named pipe":
        os.mkfifo(path)
    elif kind == "a loop of links":
        path.symlink_to(path.name)
    else:
        if os.geteuid() != 0:
            pytest.skip("making device nodes needs root (CI runs as root)")
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # like /dev/zero


SPECIAL = ["a named pipe", "a loop of links", "a character device"]


@pytest.mark.parametrize("kind", SPECIAL)
def test_special_files_are_refused_unopened_by_sources_add_and_train(tmp_path, kind):
    source = tmp_path / "src"
    source.mkdir()
    (source / "eng_Latn.txt").write_text("hello there\n")
    make_special(kind, source / "fra_Latn.txt")
    db = tmp_path / "s.db"
    for given in (source, source / "fra_Latn.txt"):  # in a folder, and given itself
        result = invoke(db, "sources", "add", "src", given)
        assert result.exit_code == 1, result.output
        assert f"is {kind}" in " ".join(result.output.split())
    from typer.testing import CliRunner

    from analyzer.cli import app

    result = CliRunner().invoke(app, ["train", str(source / "fra_Latn.txt"), "--vocab", "300"])
    assert result.exit_code in (1, 2), result.output  # a loop: typer's "does not exist"
    if kind != "a loop of links":
        assert kind in " ".join(result.output.split()), result.output


@pytest.mark.slow
@pytest.mark.parametrize("block", [1, 2, 7, 64])
def test_long_lines_across_many_blocks_are_read_whole(tmp_path, monkeypatch, block):
    """Lines longer than many blocks (gathered once, not copied at each block: registering one
    200 MB line took 24 s and now about 6), next to short ones and a last line without a break."""
    from analyzer.corpus import streams

    monkeypatch.setattr(streams, "READ_BYTES", block)
    lines = ["short", "x" * 1000, "", "é" * 300 + "end", "a", "y" * 129, "last without a break"]
    path = tmp_path / "eng_Latn.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    read = [text for batch in streams.read_documents(path) for text in batch.texts]
    assert read == [line for line in lines if line]
    one = tmp_path / "one.txt"
    one.write_text("z" * 2_000_000 + "\n")  # a million blocks of 2: quadratic would never end
    monkeypatch.setattr(streams, "READ_BYTES", 2)
    assert [len(t) for b in streams.read_documents(one) for t in b.texts] == [2_000_000]


def broken_files() -> dict[str, bytes]:
    """Compressed files damaged each way, their good text 20,000 lines (over 800 KB: zstd
    gives nothing of a block until its end, 128 KB)."""
    import gzip
    import lzma

    import zstandard

    text = "".join(f"line {i} of the good text before the break\n" for i in range(20000)).encode()
    zst, gz, xz = zstandard.ZstdCompressor().compress(text), gzip.compress(text), lzma.compress(text)
    damaged = bytearray(xz)
    damaged[len(xz) // 2] ^= 0xFF
    return {"zstd cut": zst[:len(zst) // 2], "gzip cut": gz[:len(gz) // 2],
            "gzip and garbage": gz + b"garbage", "xz damaged": bytes(damaged),
            "zstd damaged": zst[:20] + b"\xff" * 40 + zst[60:],
            "two gzip members": gz + gzip.compress(b"one more line\n")}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(broken_files()))
def test_broken_compressed_streams_keep_the_text_before_the_break(tmp_path, case):
    from analyzer.corpus import streams

    data = broken_files()[case]
    suffix = {"zstd": ".zst", "gzip": ".gz", "two ": ".gz", "xz d": ".xz"}[case[:4]]
    path = tmp_path / f"eng_Latn.txt{suffix}"
    path.write_bytes(data)
    if case == "two gzip members":
        read = [t for b in streams.read_documents(path) for t in b.texts]
        assert len(read) == 20001 and read[-1] == "one more line"
        return
    said = "broken" if "damaged" in case else "broken after [1-9]"  # not "after 0 bytes"
    with pytest.raises(streams.StreamError, match=said):
        for _ in streams.read_documents(path):
            pass
    try:
        batches = list(streams.read_documents(path, skip_invalid=True))
    except streams.StreamError:  # damaged at its start: nothing to keep, refused by name
        assert "damaged" in case
        batches = []
    read = [t for b in batches for t in b.texts]
    assert all(t.startswith("line ") for t in read)
    if "damaged" not in case:  # cut short or followed by garbage: the text before is kept
        assert len(read) > 1000 and any("broken" in n for b in batches for n in b.notes)
    db = tmp_path / "s.db"
    result = invoke(db, "sources", "add", "src", tmp_path)
    said = " ".join(result.output.split())
    assert result.exit_code in (0, 1) and "0 documents could not be read" not in said, said


@pytest.mark.parametrize("command", [("corpus", "\udcff"), ("corpus", "--texts", "\udcff"),
                                     ("run", "--vocab", "300", "--no-report", "--corpus", "\udcff"),
                                     ("run", "--vocab", "300", "--no-report", "--train-on", "\udcff"),
                                     ("sources", "show", "\udcff"), ("sources", "remove", "\udcff")])
def test_a_name_that_is_not_utf8_is_not_found_not_exit_70(tmp_path, command):
    """A corpus or source name given in bytes that are not UTF-8 (`$'\\xff'`, a surrogate
    escape in Python) was exit 70: SQLite cannot be asked for it. No name can hold it."""
    db = tmp_path / "a.db"
    assert invoke(db, "ingest").exit_code == 0
    result = invoke(db, *command)
    assert result.exit_code == 1, result.output
    assert "no corpus named '\\udcff'" in result.output or \
        "no training source named '\\udcff'" in result.output, result.output


def _zip_of(entries: list[tuple[str, bytes]]) -> bytes:
    import io
    import warnings
    import zipfile

    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a name written twice: the case tested
        for name, content in entries:
            archive.writestr(name, content)
    return data.getvalue()


TINY_ZIP_ENTRIES = [("tiny/eng_Latn.txt", b"the cat\nthe dog\n"), ("tiny/fra_Latn.txt", b"le chat\nle chien\n")]


@pytest.mark.parametrize("limit", [None, "2000"])
def test_ingest_of_a_zip_is_bounded_by_what_it_unpacks_to(tmp_path, limit):
    """Item 20: a 292 KB zip wrote 280 MB; only serve had a limit. The default is the
    service's (one definition), and --max-corpus-bytes sets it."""
    from analyzer.corpus import DEFAULT_UNPACK_LIMIT
    from helpers import dump

    db = tmp_path / "a.db"
    assert invoke(db, "ingest").exit_code == 0
    before = dump(db)
    size = (int(limit) if limit else DEFAULT_UNPACK_LIMIT) + 1
    archive = tmp_path / "bomb.zip"
    archive.write_bytes(_zip_of([*TINY_ZIP_ENTRIES, ("tiny/deu_Latn.txt", b"\n" * size)]))
    result = invoke(db, "ingest", archive, *(["--max-corpus-bytes", limit] if limit else []))
    assert result.exit_code == 1, result.output
    shown = f"{int(limit):,}" if limit else f"{DEFAULT_UNPACK_LIMIT:,}"
    assert f"bomb.zip unpacks to more than {shown} bytes" in result.output
    assert "--max-corpus-bytes" in result.output and "analyzer-zip-" not in result.output
    assert dump(db) == before
    small = tmp_path / "small.zip"
    small.write_bytes(_zip_of(TINY_ZIP_ENTRIES))
    assert invoke(db, "ingest", small, "--max-corpus-bytes", "2000").exit_code == 0


def test_a_zip_with_two_entries_of_one_name_is_refused(tmp_path):
    """Item 20: the last of the two was kept without a word."""
    from helpers import dump

    db = tmp_path / "a.db"
    assert invoke(db, "ingest").exit_code == 0
    before = dump(db)
    archive = tmp_path / "twice.zip"
    archive.write_bytes(_zip_of([*TINY_ZIP_ENTRIES, ("tiny/eng_Latn.txt", b"a cat\na dog\n")]))
    result = invoke(db, "ingest", archive)
    assert result.exit_code == 1, result.output
    assert "twice.zip: tiny/eng_Latn.txt is in the archive twice" in result.output
    assert dump(db) == before


@pytest.fixture
def silent_endpoint():
    """An address that takes connections and never answers them (a hub behind a broken proxy)."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []

    def accept():
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    server.close()
    for connection in held:
        connection.close()


def _ingest_from_hub(tmp_path, endpoint: str):
    """`analyzer ingest hf:...` in a process of its own (huggingface_hub reads HF_ENDPOINT when
    it is imported), online, against `endpoint`."""
    import os
    import subprocess
    import sys

    from helpers import dump

    db = tmp_path / "a.db"
    assert invoke(db, "ingest").exit_code == 0
    before = dump(db)
    env = {key: value for key, value in os.environ.items()
           if key not in ("ANALYZER_OFFLINE", "HF_HUB_OFFLINE")}
    env.update(HF_ENDPOINT=endpoint, HF_HUB_ETAG_TIMEOUT="1", HF_HUB_CACHE=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-m", "analyzer", "ingest", "hf:someone/corpus",
                           "--db", str(db)], env=env, capture_output=True, text=True,
                          timeout=120)  # a guard against the hang tested, not a measure
    assert dump(db) == before
    return done


def test_ingest_from_a_hub_that_never_answers_gives_up_and_says_so(tmp_path, silent_endpoint):
    """Item 19: it waited forever."""
    done = _ingest_from_hub(tmp_path, silent_endpoint)
    assert done.returncode == 1, done.stderr
    assert f"the Hugging Face hub at {silent_endpoint} did not answer within 1 s" in done.stderr
    assert "HF_HUB_ETAG_TIMEOUT sets the wait" in done.stderr and "nothing was stored" in done.stderr


def test_ingest_from_an_unreachable_hub_does_not_say_an_offline_setting_is_set(tmp_path):
    """Item 19: with the network down it said "ANALYZER_OFFLINE or HF_HUB_OFFLINE is set" when
    neither was."""
    import socket

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"
    done = _ingest_from_hub(tmp_path, endpoint)
    assert done.returncode == 1, done.stderr
    assert f"the Hugging Face hub at {endpoint} could not be reached" in done.stderr, done.stderr
    assert "is set" not in done.stderr and "not in the Hugging Face cache" in done.stderr


def test_an_interrupt_python_had_to_drop_is_delivered_again(tmp_path):
    """A stop signal whose KeyboardInterrupt lands in a finalizer was printed as "Exception
    ignored" and lost, and a process waiting on a thread then waited forever (seen under load in
    two signal tests). `keep_interrupts` delivers it again by the same signal."""
    import subprocess
    import sys

    script = tmp_path / "lost.py"
    script.write_text(
        "import signal, threading\n"
        "from analyzer.interrupts import keep_interrupts\n"
        "def stop(signum, frame):\n"
        "    raise KeyboardInterrupt('SIGTERM')\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "keep_interrupts()\n"
        "class Finalized:\n"
        "    def __del__(self):\n"
        "        raise KeyboardInterrupt('SIGTERM')  # as a handler would, inside a finalizer\n"
        "try:\n"
        "    Finalized()  # dropped at once: the interrupt is lost, then delivered again\n"
        "    threading.Event().wait(60)  # what a process waiting on a paused thread does\n"
        "    print('waited')\n"
        "except KeyboardInterrupt as error:\n"
        "    print('interrupted', error)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)  # a guard: the interrupt comes at once
    assert done.stdout.strip() == "interrupted SIGTERM", (done.stdout, done.stderr)
    assert "Exception ignored" not in done.stderr
