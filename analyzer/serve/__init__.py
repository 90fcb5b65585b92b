"""`analyzer serve`: the analyzer as a service (optional extra `analyzer[serve]`).

A FastAPI application over one database, run by uvicorn: a JSON API with the same documents as
the CLI's `--json` outputs (from the same library functions), the pages (runs, a run's report,
the playground), and runs started in their own process, one at a time.

    from analyzer.serve import create_app
    app = create_app(Path("analyzer.db"))          # any ASGI server can run it
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analyzer.errors import Invalid
from analyzer.limits import (
    DEFAULT_BODY_LIMIT,
    DEFAULT_CORPUS_LIMIT,
    DEFAULT_COUNTING_PROCESSES,
    DEFAULT_LOCK_WAIT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_QUEUE,
    DEFAULT_UPLOAD_SPACE,
    MIN_BODY_RATE,
    REQUEST_TIMEOUT,
)

from .app import create_app
from .connections import KEEP_ALIVE_TIMEOUT, protocol_class, raise_file_limit
from .guards import LOOPBACK_NAMES, host_name
from .logs import json_line, use_json_stderr, uvicorn_log_config
from .uploads import Uploads

__all__ = ["DEFAULT_BODY_LIMIT", "DEFAULT_CORPUS_LIMIT", "DEFAULT_COUNTING_PROCESSES",
           "DEFAULT_LOCK_WAIT", "DEFAULT_MAX_CONNECTIONS", "DEFAULT_MAX_QUEUE",
           "DEFAULT_UPLOAD_SPACE", "MIN_BODY_RATE", "REQUEST_TIMEOUT", "ServeError",
           "allowed_hosts", "create_app", "is_loopback", "serve"]

TOKEN_ENV = "ANALYZER_TOKEN"
MIN_TOKEN = 16
"""A token's least length, spaces around it not counted."""


class ServeError(Invalid):
    """The server cannot start as asked; the message says why and what to do."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


WILDCARDS = ("0.0.0.0", "::", "")
"""Addresses that mean every interface of this machine."""


def allowed_hosts(host: str, extra: list[str] | tuple[str, ...] = ()) -> frozenset[str] | None:
    """The host names a server bound to `host` answers to: loopback's names on loopback; the
    address itself otherwise; and the names the operator lists (`extra`). None (any name) for
    every interface with no list: behind a token, the Host header defends nothing there.

    >>> sorted(allowed_hosts("127.0.0.1", ["analyzer.local"]))
    ['127.0.0.1', '::1', 'analyzer.local', 'localhost']
    """
    names = {host_name(name.encode("utf-8")) for name in extra if name.strip()}
    if is_loopback(host):
        return frozenset(LOOPBACK_NAMES | {host.lower()} | names)
    if host in WILDCARDS:
        return frozenset(names) if names else None
    return frozenset({host.lower()} | names)


def serve(db: Path, host: str = "127.0.0.1", port: int = 8000, *, token: str | None = None,
          body_limit: int = DEFAULT_BODY_LIMIT, allow_hosts: list[str] | tuple[str, ...] = (),
          max_connections: int = DEFAULT_MAX_CONNECTIONS,
          counting_processes: int = DEFAULT_COUNTING_PROCESSES, log_format: str = "text",
          max_queue: int = DEFAULT_MAX_QUEUE, corpus_limit: int = DEFAULT_CORPUS_LIMIT,
          upload_space: int = DEFAULT_UPLOAD_SPACE, lock_wait: float = DEFAULT_LOCK_WAIT,
          request_timeout: float = REQUEST_TIMEOUT, min_body_rate: int = MIN_BODY_RATE,
          announce: Callable[[str], None] = print,
          listening: Callable[[], None] = lambda: None) -> None:
    """Serve until interrupted. Any address but loopback needs a token. `port` 0 takes a free
    port; `announce` is told the address actually served. The server answers requests naming
    `allowed_hosts(host, allow_hosts)`, holds at most `max_connections` connections, and counts
    for at most `counting_processes` requests at once; it logs each request on stderr in
    `log_format` (text, json, none); it queues at most `max_queue` runs and takes corpora of
    at most `corpus_limit` bytes, the uploads being read taking at most `upload_space` bytes of
    temporary disk. A write waits at most `lock_wait` s for another process's lock. A request's
    headers must come within `request_timeout` s, its body at `min_body_rate` bytes a second
    over each such window. `listening` is called once the address is held, before the
    database is opened: a busy port is refused before anything is made."""
    import uvicorn

    if log_format == "json":  # every line on stderr JSON, uvicorn's and warnings included
        use_json_stderr()
    if token == "":
        token = None  # an empty ANALYZER_TOKEN is no token
    if token is not None:
        if len(token.strip()) < MIN_TOKEN:
            shown = "blank" if not token.strip() else f"{len(token.strip())} once stripped"
            raise ServeError(f"a token needs at least {MIN_TOKEN} characters other than spaces "
                             f"(this one is {shown}); e.g. python -c 'import secrets; "
                             "print(secrets.token_urlsafe())'")
        token = token.strip()
    largest_upload = Uploads(corpus_limit).needs(corpus_limit)
    if upload_space < largest_upload:
        raise ServeError(f"--max-upload-space {upload_space:,} cannot hold one upload of the "
                         f"largest size (--max-corpus-bytes {corpus_limit:,}), which may need "
                         f"{largest_upload:,} bytes: the body, its "
                         "copy and what a zip unpacks to")
    if not is_loopback(host) and token is None:
        raise ServeError(f"serving on {host} (not this machine only) needs a token, so that only "
                         f"those who have it can use the server: --token or {TOKEN_ENV}")
    # Every connection is a descriptor, and so are the database's and the runs' files.
    limit = raise_file_limit(max_connections + 256)
    if limit < max_connections + 64:
        raise ServeError(f"this process may open {limit} files, too few for {max_connections} "
                         "connections; lower --max-connections or raise the limit (ulimit -n)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, so that asyncio sets TCP_NODELAY on each connection: with proto 0 it
    # does not, and every response waited 40 ms for a delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)  # connections wait in the backlog until uvicorn accepts them
    except OSError as error:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    try:
        listening()
        app = create_app(db, token=token, body_limit=body_limit,
                         allowed_hosts=allowed_hosts(host, allow_hosts),
                         counting_processes=counting_processes, log_format=log_format,
                         max_queue=max_queue, corpus_limit=corpus_limit,
                         upload_space=upload_space, lock_wait=lock_wait)
    except BaseException:
        sock.close()
        raise
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    url = f"http://{shown}:{sock.getsockname()[1]}"
    serving = f"Serving {db} on {url} (Ctrl-C to stop)"
    announce(json_line(serving, url=url) if log_format == "json" else serving)
    class Server(uvicorn.Server):
        async def shutdown(self, sockets=None) -> None:
            app.state.runs.stop_waiting()  # long polls answer now, not when they time out
            await super().shutdown(sockets)

    log_settings: dict[str, Any] = (
        {"log_config": uvicorn_log_config()} if log_format == "json" else {})
    server = Server(uvicorn.Config(
        app, log_level="warning", access_log=False, timeout_graceful_shutdown=30, **log_settings,
        http=protocol_class(max_connections, request_timeout, min_body_rate),
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT))
    server.run(sockets=[sock])
