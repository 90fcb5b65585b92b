"""Writing a file the user named, safely: whole or not at all, and never replacing what is not
a regular file; and what a written document says of files (`without_local_paths`: never
where they lie on this machine, unless asked).

Every file analyzer writes (an export, a report page, pending results, a tokenizer in the
store) goes through `write_atomically`. A regular file (or a new one) is written through a
temporary file beside it and a rename, so a reader never sees half of it, even if the process
is killed midway; a link keeps pointing where it pointed (the file it names is the one
replaced). Anything else (a device such as /dev/stdout or /dev/null, a named pipe, a socket's
path) is written in place, as a shell's `>` would: renaming over it would destroy it, and
its reader would get nothing.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from analyzer.errors import Invalid


def cache_folder(leaf: str, env: str | None = None) -> Path:
    """Where the analyzer keeps `leaf` in the user's cache: the folder `env` names if it is
    set (a leading ~ is the home folder, as a shell would have made it, had it not been
    quoted: ANALYZER_KEPT='~/kept' in a unit file), else $XDG_CACHE_HOME (or
    ~/.cache)/analyzer/`leaf`.

    >>> cache_folder("kept", "NO_SUCH_VARIABLE").parts[-2:]
    ('analyzer', 'kept')
    """
    if env and os.environ.get(env):
        try:
            return Path(os.environ[env]).expanduser()
        except RuntimeError:  # ~name of no user on this machine
            raise Invalid(f"{env}={os.environ[env]}: a folder in the home of "
                          f"{os.environ[env][1:].split('/')[0]!r}, who is no user here; give a "
                          "folder (~/x is in your own home)") from None
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "analyzer" / leaf


def is_special(path: Path) -> bool:
    """Whether `path` names something that exists and is neither a regular file nor a folder
    (a device, a pipe, a socket), following links."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


FULL_DISK_BYTES = 1 << 16
"""A disk with less free space than this is full: SQLite's shared-memory file alone needs 32 KiB."""


def disk_is_full(path: Path) -> bool:
    """Whether the file system holding `path` (a file, or where it would go) has no room."""
    folder = Path(path).parent if not Path(path).is_dir() else Path(path)
    try:
        return shutil.disk_usage(folder if str(folder) else ".").free < FULL_DISK_BYTES
    except OSError:
        return False


def kind_of(mode: int) -> str:
    """What a file of this mode (`os.stat(...).st_mode`) is, in words."""
    for test, kind in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return kind
    return "not a file"


def not_regular(path: Path) -> str | None:
    """Why `path` (through its links) is not a regular file one can read to its end, in words;
    None when it is. A named pipe or a device would block or read without end, a loop of links
    has nothing at its end: all are refused before anything opens them.

    >>> not_regular(Path(__file__)) is None
    True
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a loop of links (it leads back to itself)"
        if error.errno == errno.ENOENT:
            return "a link to nothing (its target is missing)" if os.path.islink(path) \
                else "missing"
        return f"unreadable ({error.strerror})"
    return None if stat.S_ISREG(mode) else kind_of(mode)


Content = str | bytes | memoryview | Iterable[str] | Callable[[BinaryIO], None]


def write_atomically(path: Path, content: Content) -> None:
    """Write `content` (text as UTF-8, bytes or a view of them; pieces of text, written as
    they come, so that a large document is never whole in memory; or a function that writes
    to the open file) to `path`: atomically for a
    regular or new file,
    in place for a special one. OSError (disk full, no permission) leaves a regular file as it
    was, and no temporary file behind."""
    path = Path(path)
    if is_special(path):
        with open(path, "wb") as file:  # noqa: PTH123 - a device or a pipe, opened as such
            _write(file, content)
        return
    target = path.resolve() if path.is_symlink() else path
    temporary = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        with open(temporary, "wb") as file:  # noqa: PTH123
            _write(file, content)
            file.flush()
            os.fsync(file.fileno())  # on disk before the rename makes it the file
        temporary.replace(target)
    except OSError as error:
        if error.filename is None or error.filename == str(temporary):  # a writer's (pyarrow's)
            error.filename = str(path)  # error names no file: the one being written is said
        raise
    finally:
        temporary.unlink(missing_ok=True)


def _write(file: BinaryIO, content: Content) -> None:
    if callable(content):
        content(file)
        return
    if isinstance(content, (str, bytes, memoryview)):
        file.write(content.encode("utf-8") if isinstance(content, str) else content)
        return
    for piece in content:
        file.write(piece.encode("utf-8"))


LOCAL_FOLDERS = re.compile(r"(?<![\w:/.~])/(?:[^\s:;,()<>\"'/]+/)+(?=[^\s:;,()<>\"'/])")
"""The folders of an absolute path in a text (not a URL's: `https://host/...` is left whole)."""


def without_local_paths(text: str) -> str:
    """`text` with every absolute path cut to its file name: what is published (a results
    folder, a docs site) says which file, in which package and with which SHA-256, never
    where it lay on the machine that wrote it.

    >>> without_local_paths("a.tiktoken: /home/me/venv/site-packages/pkg/data/a.tiktoken.gz "
    ...                     "in pkg 1.0 (SHA-256 ab verified); b: https://host.example/x/b")
    'a.tiktoken: a.tiktoken.gz in pkg 1.0 (SHA-256 ab verified); b: https://host.example/x/b'
    """
    return LOCAL_FOLDERS.sub("", text)
