"""What the analyzer keeps about production tokenizers from one run to the next, in a folder
of its own (ANALYZER_KEPT, else the user's cache folder): what costs seconds to work out and
never changes for the same library or the same file (a library's Unicode tables, read out of
it; a vocabulary's scripts, keyed by its file's SHA-256). Anything missing or unreadable there
is worked out again; nothing kept is ever needed.

>>> kept_path("scripts", "x.json").parts[-2:]
('scripts', 'x.json')
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

from analyzer.files import cache_folder, write_atomically

KEPT_ENV = "ANALYZER_KEPT"


def kept_dir() -> Path:
    """ANALYZER_KEPT, else analyzer/kept in the user's cache folder."""
    return cache_folder("kept", KEPT_ENV)


def kept_path(kind: str, name: str) -> Path:
    return kept_dir() / kind / name


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """One process works a kept file out at a time; the others wait, then read it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(path.with_name(path.name + ".lock"), "a")  # noqa: SIM115 (closed below)
    except OSError:
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def keep(path: Path, data: bytes) -> None:
    """Write a kept file atomically; a folder that cannot be written keeps nothing."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, data)


def sealed(about: dict, body: bytes) -> bytes:
    """A kept file: the SHA-256 of all that follows, a JSON line about the body, the body.

    >>> unsealed(sealed({"n": 1}, b"xy"))
    ({'n': 1}, b'xy')
    >>> unsealed(sealed({"n": 1}, b"xy").replace(b'1', b'2')) is None
    True
    """
    rest = json.dumps(about).encode() + b"\n" + body
    return hashlib.sha256(rest).hexdigest().encode() + b"\n" + rest


def unsealed(data: bytes) -> tuple[dict, bytes] | None:
    """What `sealed` wrote, or None for a file that is not whole (its header included: a
    changed header read with a good body gave wrong counts)."""
    digest, _, rest = data.partition(b"\n")
    if hashlib.sha256(rest).hexdigest().encode() != digest:
        return None
    head, _, body = rest.partition(b"\n")
    with contextlib.suppress(ValueError):
        about = json.loads(head)
        if isinstance(about, dict):
            return about, body
    return None


def kept_json(kind: str, name: str, work_out: Callable[[], dict],
              valid: Callable[[dict], bool]) -> dict:
    """The JSON document kept under this name if `valid` takes it, else `work_out()`'s, kept
    for next time (a document of another shape was used as it was: a run stored it)."""
    path = kept_path(kind, name)

    def read() -> dict | None:
        with contextlib.suppress(OSError, ValueError):
            found = json.loads(path.read_bytes())
            if isinstance(found, dict) and valid(found):
                return found
        return None

    if (found := read()) is not None:
        return found
    with locked(path):
        if (found := read()) is not None:
            return found
        document = work_out()
        keep(path, json.dumps(document).encode())
        return document
