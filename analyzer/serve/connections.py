"""Connections that cannot be held open for nothing, nor in numbers that starve the server.

uvicorn closes a keep-alive connection a few seconds after its last response, but a connection
that never sends a request, or sends half of one (its headers, or its body, a byte at a time)
has no timer at all: a client could hold every socket of the server. This protocol gives each
connection deadlines:

- its next request's headers: `request_timeout` seconds from when the connection opened or its
  last response ended (an idle connection, or headers that never finish, is closed);
- its body: timed by its progress, not by a total (an honest upload over a slow link may take
  minutes): at least `min_body_rate` bytes a second over each `request_timeout` window. A body
  slower than that is answered 408, saying so, and closed.

A request whose body is in may take as long as its answer takes (a long poll). A request whose
target is a whole URL (absolute-form) is read with that URL's host as its Host (RFC 9112
3.2.2), so the guards check the host it names.

And the server holds at most `max_connections` at once: one more is answered 503 and closed at
once, so that the server's file descriptors are never all taken; and a request's headers take
at most `MAX_HEAD_BYTES` (431 past it), so that no connection holds memory without end.
"""

from __future__ import annotations

import asyncio
import json
import resource

from analyzer.limits import DEFAULT_MAX_CONNECTIONS, MIN_BODY_RATE, REQUEST_TIMEOUT

KEEP_ALIVE_TIMEOUT = 5
"""Seconds an idle keep-alive connection stays open after a response (uvicorn's own timer)."""


def _problem_answer(status: int, title: str, detail: str) -> bytes:
    """A whole answer, written to a connection that is then closed (as a problem document)."""
    body = json.dumps({"type": "about:blank", "title": title, "status": status,
                       "detail": detail}).encode()
    return (f"HTTP/1.1 {status} {title}\r\ncontent-type: application/problem+json\r\n"
            "connection: close\r\ncontent-length: ".encode() + str(len(body)).encode()
            + b"\r\n\r\n" + body)


def _request_timeout_answer(timeout: float, rate: int) -> bytes:
    """The 408 written to a connection whose body came too slowly."""
    return _problem_answer(408, "Request Timeout",
                           f"the request's body came slower than {rate:,} bytes a second over "
                           f"{timeout:g} s, so it was cut off and nothing was done with it; send "
                           "it again over a faster link (the operator sets the least rate: "
                           "analyzer serve --min-body-rate)")


def at_deadline(cycle, received: int, least: float) -> str:
    """What a connection's deadline does, from its request (`cycle`: uvicorn's, or None before
    the first) and the bytes it received in the window: "answer" (the whole request is in: its
    answer may take as long as it takes), "wait" (its body comes slowly but at the least rate:
    another window), "408" (its body is slower than that: say so, then close) or "close" (idle,
    or its headers never finished).

    >>> from types import SimpleNamespace as Cycle
    >>> body = Cycle(response_complete=False, more_body=True, response_started=False)
    >>> at_deadline(body, 40_000, 32_000), at_deadline(body, 100, 32_000)
    ('wait', '408')
    >>> at_deadline(Cycle(response_complete=False, more_body=False, response_started=False), 0, 1)
    'answer'
    >>> at_deadline(None, 0, 1), at_deadline(Cycle(response_complete=True, more_body=False), 0, 1)
    ('close', 'close')
    """
    if cycle is None or cycle.response_complete:
        return "close"
    if not cycle.more_body:
        return "answer"
    if received >= least:
        return "wait"
    return "close" if cycle.response_started else "408"


MAX_HEAD_BYTES = 256 * 1024
"""Bytes a request's start line and headers may take (a browser's, cookies and all, take a few
thousand): more is answered 431 and the connection closed, so that no client holds memory by
sending headers that never end (httptools keeps them all; h11 stops at 16 KiB itself)."""

HEADERS_TOO_LARGE = _problem_answer(
    431, "Request Header Fields Too Large",
    f"the request's headers are over {MAX_HEAD_BYTES:,} bytes; nothing was done with it")

SERVICE_UNAVAILABLE = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n"
                       b"retry-after: 1\r\nconnection: close\r\ncontent-length: 44\r\n\r\n"
                       b"the server has too many connections open now")


def authority(target: bytes) -> bytes | None:
    """The host (and port) an absolute-form request target names (`GET http://host:port/path`),
    or None when it names none. RFC 9112 3.2.2: a server must accept such a target and take
    its host from it, not from the Host header; the guards then check that host, so a target
    naming another host is refused as a Host header naming it would be.

    >>> authority(b"http://127.0.0.1:8000/api/runs"), authority(b"http://[::1]/x")
    (b'127.0.0.1:8000', b'[::1]')
    """
    import httptools

    try:
        parsed = httptools.parse_url(target)
    except httptools.HttpParserInvalidURLError:
        return None
    if not parsed.host:
        return None
    host = b"[" + parsed.host + b"]" if b":" in parsed.host else parsed.host
    return host + (b":%d" % parsed.port if parsed.port else b"")


def raise_file_limit(needed: int) -> int:
    """Raise this process's soft limit on open files towards `needed` (never past the hard
    limit); the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        soft = wanted
    return soft


def protocol_class(max_connections: int = DEFAULT_MAX_CONNECTIONS,
                   request_timeout: float = REQUEST_TIMEOUT,
                   min_body_rate: int = MIN_BODY_RATE) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools' when installed, else h11's), with the deadlines and
    the bound on connections."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
    except ImportError:  # no httptools
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base  # type: ignore[assignment]

    too_slow = _request_timeout_answer(request_timeout, min_body_rate)
    counts_head = hasattr(Base, "on_headers_complete")  # httptools'; h11 bounds them itself
    least = min_body_rate * request_timeout  # bytes each window must bring

    class DeadlineProtocol(Base):
        _deadline: asyncio.TimerHandle | None = None
        _received = 0
        """Bytes received on this connection so far."""
        _mark = 0
        """`_received` when the deadline was last armed."""
        _in_head = True
        """The connection is receiving a request's start line and headers (or waits for them)."""
        _head = 0
        """Bytes received of them so far."""

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            if len(self.connections) > max_connections:  # this one included
                transport.write(SERVICE_UNAVAILABLE)
                transport.close()
                return
            self._arm()

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            # Counted after the parser has seen them: a request that starts in this packet
            # arms its window (on_message_begin) before its first body bytes are counted in it.
            self._received += len(data)
            if self._in_head and counts_head:
                self._head += len(data)
                if self._head > MAX_HEAD_BYTES and not self.transport.is_closing():
                    self.transport.write(HEADERS_TOO_LARGE)
                    self.transport.close()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_head, self._head = True, 0
            self._arm()  # the request's own deadline, for its headers

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def on_headers_complete(self) -> None:
            self._in_head = False
            if not self.url.startswith(b"/") and self.url != b"*":
                host = authority(self.url)
                self.headers[:] = [(name, value) for name, value in self.headers if name != b"host"]
                if host is not None:
                    self.headers.append((b"host", host))
            super().on_headers_complete()

        def _arm(self) -> None:
            self._disarm()
            self._mark = self._received
            self._deadline = self.loop.call_later(request_timeout, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            action = at_deadline(self.cycle, self._received - self._mark, least)
            if action == "wait":
                self._arm()
                return
            if action == "408":
                self.transport.write(too_slow)
            if action != "answer":
                self.transport.close()

    return DeadlineProtocol
