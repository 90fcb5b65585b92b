"""Output to, and databases at, things that are not regular files: a device, a pipe, standard
output, a full device. Nothing is ever replaced but a regular file; a database path that is
not one is refused before SQLite touches it; and the exit codes say whose fault it was.

The devices are the tests' own nodes (mknod, as root: CI is), never the machine's /dev: code
that gets this wrong replaces the file it is given, and must not take /dev/null with it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from analyzer.files import write_atomically
from helpers import RunProcess, cli_output


@pytest.fixture
def device(tmp_path):
    """make(name, kind): a character device node of this test's, like /dev/null (1, 3),
    /dev/zero (1, 5) or /dev/full (1, 7)."""
    if os.geteuid() != 0:
        pytest.skip("making device nodes needs root (CI runs as root)")

    def make(name: str, minor: int) -> Path:
        path = tmp_path / name
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
        return path
    return make


NULL, ZERO, FULL = 3, 5, 7


@pytest.fixture(scope="module")
def run_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("special") / "a.db"
    cli_output(db, "ingest")
    cli_output(db, "run", "--vocab", "300", "--jobs", "1", "--no-report")
    return db


def kind(path) -> int:
    return stat.S_IFMT(os.stat(path).st_mode)


@pytest.mark.slow
def test_export_to_a_device_writes_into_it_and_leaves_it_a_device(run_db, device):
    null = device("null", NULL)
    code, _, stderr = RunProcess("export", "1", "--out", str(null), "--db", str(run_db)).finish()
    assert code == 0, stderr
    assert kind(null) == stat.S_IFCHR


@pytest.mark.slow
def test_export_to_a_full_device_says_the_disk_is_full_and_leaves_it_alone(run_db, device):
    full = device("full", FULL)
    code, _, stderr = RunProcess("export", "1", "--out", str(full), "--db", str(run_db)).finish()
    assert code == 1 and "the disk is full" in " ".join(stderr.split()), stderr
    assert "Wrote" not in stderr and kind(full) == stat.S_IFCHR


@pytest.mark.slow
def test_export_to_a_named_pipe_reaches_its_reader(run_db, tmp_path):
    pipe = tmp_path / "out.json"
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()), daemon=True)
    reader.start()
    code, _, stderr = RunProcess("export", "1", "--out", str(pipe), "--db", str(run_db)).finish()
    reader.join(timeout=60)
    assert code == 0, stderr
    assert received and received[0].startswith(b"{") and b'"records"' in received[0]
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)


@pytest.mark.slow
def test_export_to_dev_stdout_is_standard_output(run_db, tmp_path):
    stdout_link = tmp_path / "stdout"  # what /dev/stdout is: a link to the process's fd 1
    stdout_link.symlink_to("/proc/self/fd/1")
    code, stdout, stderr = RunProcess("export", "1", "--format", "csv", "--out", str(stdout_link),
                                      "--db", str(run_db)).finish()
    assert code == 0, stderr
    assert "vocab" in stdout.splitlines()[0] and len(stdout.splitlines()) > 2, stdout
    assert stdout_link.is_symlink()


@pytest.mark.slow
@pytest.mark.parametrize("command", [["show", "1", "--json"], ["export", "1"]])
def test_a_full_standard_output_is_a_situation_not_a_bug(run_db, command, device):
    with open(device("full", FULL), "w") as full:
        done = subprocess.run([sys.executable, "-m", "analyzer", *command, "--db", str(run_db)],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "the disk is full" in " ".join(done.stderr.split()) and "bug" not in done.stderr


def test_write_atomically_replaces_regular_files_and_keeps_links(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_atomically(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    write_atomically(tmp_path / "fresh.json", b"bytes")
    assert (tmp_path / "fresh.json").read_bytes() == b"bytes"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []


def test_write_atomically_streams_pieces_and_a_failure_half_way_keeps_the_old_file(tmp_path):
    target = tmp_path / "export.json"
    write_atomically(target, (piece for piece in ["{", '"a": ', "1}"]))
    assert target.read_text() == '{"a": 1}'

    def failing():
        yield '{"b": '
        raise RuntimeError("the document could not be finished")

    with pytest.raises(RuntimeError):
        write_atomically(target, failing())
    assert target.read_text() == '{"a": 1}'  # the old file, whole
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []


@pytest.mark.slow
@pytest.mark.parametrize("minor", [NULL, ZERO])
def test_a_database_path_that_is_a_device_is_refused_untouched(device, tmp_path, minor):
    path = device("dev", minor)
    before = sorted(os.listdir(tmp_path))
    code, _, stderr = RunProcess("runs", "--db", str(path)).finish()
    assert code == 1 and f"{path} is a character device, not a database file" in " ".join(stderr.split())
    assert sorted(os.listdir(tmp_path)) == before  # no dev-journal beside it


@pytest.mark.slow
def test_a_database_path_that_is_a_pipe_is_refused_without_blocking(tmp_path):
    pipe = tmp_path / "db"
    os.mkfifo(pipe)
    code, _, stderr = RunProcess("runs", "--db", str(pipe)).finish()
    assert code == 1 and "is a named pipe, not a database file" in " ".join(stderr.split())


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["run", "--vocab", "300", "--executor", "bogus"],
    ["run", "--vocab", "300", "--tie-break", "random"],
    ["show", "abc"],
    ["export", "1", "--format", "xml"],
])
def test_a_command_line_that_cannot_be_parsed_exits_2_not_like_a_bug(run_db, args):
    code, _, stderr = RunProcess(*args, "--db", str(run_db)).finish()
    assert code == 2 and "bug" not in stderr and "Usage" in stderr, stderr


@pytest.mark.slow
def test_a_database_path_that_is_a_folder_is_a_usage_error(tmp_path):
    code, _, stderr = RunProcess("runs", "--db", str(tmp_path), env={"COLUMNS": "500"}).finish()
    assert code == 2 and "is a directory" in stderr and "bug" not in stderr
