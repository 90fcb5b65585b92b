"""Which process owns a run, told apart from a later process that happens to get its pid.

A run records its host, pid and the pid's start time. It is stale when, on the same host,
that pid no longer exists or now belongs to a process started at another time. A run of
another host is never judged from here.

>>> identity = this_process()
>>> is_alive(*identity)
True
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def this_process() -> tuple[str, int, str | None]:
    """(host, pid, start time) of the calling process."""
    return socket.gethostname(), os.getpid(), start_time(os.getpid())


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), or None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may contain spaces or parentheses.
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[19]  # field 22 of the whole line


def is_alive(host: str | None, pid: int | None, started: str | None) -> bool:
    """Whether the process that owned a run may still be running.

    True when it cannot be judged from here (another host): a run is only reaped when its
    process is known to be gone.
    """
    if not pid:
        return False
    if host and host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    return started is None or start_time(pid) in (None, started)
