"""One line per request, for an operator's log collector: `text` (read by people) or `json` (one
object a line). The path is logged without its query string and no header is, so neither texts
sent to count nor tokens reach the log.

    127.0.0.1 GET /api/runs 200 3.1 ms 512 B
    {"time": "2026-12-03T01:20:00.123Z", "client": "127.0.0.1", "method": "GET",
     "path": "/api/runs", "status": 200, "ms": 3.1, "bytes": 512}

(the JSON on one line).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

FORMATS = ("text", "json", "none")


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
                stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
                self.write(json.dumps({"time": stamp, "client": client, "method": scope["method"],
                                       "path": scope["path"], "status": status, "ms": ms,
                                       "bytes": size}))
            else:
                self.write(f"{client} {scope['method']} {scope['path']} {status} {ms} ms {size} B")
