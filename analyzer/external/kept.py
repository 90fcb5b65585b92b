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
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from analyzer.files import write_atomically

KEPT_ENV = "ANALYZER_KEPT"


def kept_dir() -> Path:
    """ANALYZER_KEPT, else analyzer/kept in the user's cache folder."""
    if os.environ.get(KEPT_ENV):
        return Path(os.environ[KEPT_ENV])
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "analyzer" / "kept"


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


def kept_json(kind: str, name: str, work_out: Callable[[], dict]) -> dict:
    """The JSON document kept under this name, or `work_out()`'s, kept for next time."""
    path = kept_path(kind, name)
    with contextlib.suppress(OSError, ValueError):
        return json.loads(path.read_bytes())
    with locked(path):
        with contextlib.suppress(OSError, ValueError):
            return json.loads(path.read_bytes())
        document = work_out()
        keep(path, json.dumps(document).encode())
        return document
