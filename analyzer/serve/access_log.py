"""One line per request, for an operator's log collector: `text` (read by people) or `json` (one
object a line). The path is logged without its query string and no header is, so neither texts
sent to count nor tokens reach the log.

    127.0.0.1 GET /api/runs 200 3.1 ms 512 B
    {"time": "2026-12-03T01:20:00.123Z", "client": "127.0.0.1", "method": "GET",
     "path": "/api/runs", "status": 200, "ms": 3.1, "bytes": 512}

(the JSON on one line). In the text line, the path's characters that could end the line or
pass for another field (control characters, CR and LF, DEL, C1 controls, spaces, line
separators, invisible format characters) and the backslash are written as escapes (`\\x0a`),
so a request (`/x%0aFORGED`) cannot write a line of its own.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

from .logs import now

FORMATS = ("text", "json", "none")


def escaped(text: str) -> str:
    """`text` with every character that is not plainly visible (or is a space or a backslash)
    written as a Python escape: one field on one line, whatever a request sent.

    >>> escaped("/x\\nFORGED 200"), escaped("/a\\\\b\\x7f\\x85\\u2028"), escaped("/état")
    ('/x\\\\nFORGED\\\\x20200', '/a\\\\\\\\b\\\\x7f\\\\x85\\\\u2028', '/état')
    """
    if text.isprintable() and " " not in text and "\\" not in text:
        return text  # the common case: as it is
    return "".join(_escape(char) for char in text)


def _escape(char: str) -> str:
    if char == " ":
        return "\\x20"
    if char == "\\" or not char.isprintable():
        return char.encode("unicode_escape").decode("ascii")
    return char


def stderr_line(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class AccessLog:
    """ASGI middleware: after each HTTP request, its line (`fmt` "text" or "json") to `write`."""

    def __init__(self, app, fmt: str = "text", write: Callable[[str], None] = stderr_line):
        if fmt not in FORMATS[:2]:
            raise ValueError(f"log format {fmt!r} is not one of text, json")
        self.app, self.fmt, self.write = app, fmt, write

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()
        status, size = 0, 0

        async def sending(message):
            nonlocal status, size
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                size += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            client = (scope.get("client") or ("-",))[0]
            ms = round((time.perf_counter() - start) * 1000, 1)
            if self.fmt == "json":
                self.write(json.dumps({"time": now(), "client": client, "method": scope["method"],
                                       "path": scope["path"], "status": status, "ms": ms,
                                       "bytes": size}))
            else:
                self.write(f"{client} {escaped(scope['method'])} {escaped(scope['path'])} {status} "
                           f"{ms} ms {size} B")
