"""The server's own lines on stderr as JSON, one object a line, when the operator asks for a
JSON log (`analyzer serve --log-format json`): so that a log collector reads every line, not
only the access log's.

    {"time": "2026-12-03T01:20:00.123Z", "level": "info", "message": "Serving ... on http://..."}

`use_json_stderr` makes this process's stderr such a log: logging records (uvicorn's, the app's,
warnings) are formatted as JSON, and any other line written to stderr (a message of the command
line, a traceback printed by a thread) is wrapped as one, while a line that is already a JSON
object (the access log's) passes as it is. A run's process does the same (`runner._child`).
"""

from __future__ import annotations

import io
import json
import logging
import sys
import threading
from datetime import UTC, datetime
from typing import Any, TextIO


def now() -> str:
    """The time as every JSON line of the log has it, the access log's too (UTC,
    milliseconds, Z)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def json_line(message: str, level: str = "info", **fields: Any) -> str:
    """One log line: time, level, message and any other fields.

    >>> json.loads(json_line("Serving", logger="uvicorn"))["message"]
    'Serving'
    """
    return json.dumps({"time": now(), "level": level, "message": message, **fields})


class JsonFormatter(logging.Formatter):
    """A logging record as one JSON line, its exception (if any) in `exception`."""

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = {"logger": record.name}
        if record.exc_info:
            fields["exception"] = self.formatException(record.exc_info)
        return json_line(record.getMessage(), record.levelname.lower(), **fields)


def is_json_object(line: str) -> bool:
    """Whether a line is already a JSON object (the access log's), to pass as it is."""
    if not line.startswith("{"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


ERROR_STARTS = ("Error:", "Traceback", "  File ", "    ")
"""How a line written to stderr as text starts when it says an error (the command line's
`Error: ...`, a traceback's lines): logged at level `error`, the others at `info`."""


class JsonStderr(io.TextIOBase):
    """A text stream over `stream` that writes each line as a JSON object: a line that is one
    already as it is, any other as `{"time", "level", "message"}`."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.pending = ""
        self.lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False  # what is written here is a log, not a terminal's text

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        with self.lock:
            self.pending += text
            *lines, self.pending = self.pending.split("\n")
            for line in lines:
                self._emit(line)
        return len(text)

    def flush(self) -> None:
        with self.lock:
            self.stream.flush()

    def close_line(self) -> None:
        """Write what is left of an unfinished line (at exit)."""
        with self.lock:
            if self.pending:
                self._emit(self.pending)
                self.pending = ""
            self.stream.flush()

    def _emit(self, line: str) -> None:
        line = line.rstrip("\r")
        if not line.strip():
            return  # a blank line says nothing, and is no JSON
        if not is_json_object(line):
            line = json_line(line, "error" if line.startswith(ERROR_STARTS) else "info")
        self.stream.write(line + "\n")
        self.stream.flush()


def use_json_stderr() -> None:
    """Make this process's stderr a JSON log (see the module's docstring); idempotent."""
    import atexit

    if isinstance(sys.stderr, JsonStderr):
        return
    wrapped = JsonStderr(sys.stderr)
    sys.stderr = wrapped
    atexit.register(wrapped.close_line)
    handler = logging.StreamHandler(wrapped)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers = [handler]
    logging.captureWarnings(True)  # warnings.warn: a logging record too


UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's logging configuration for a JSON log: its loggers' records go to the root
    logger's JSON handler (`use_json_stderr`) instead of uvicorn's own text handlers."""
    return {"version": 1, "disable_existing_loggers": False,
            "loggers": {name: {"handlers": [], "propagate": True} for name in UVICORN_LOGGERS}}
