"""Connections that cannot be held open for nothing, nor in numbers that starve the server.

uvicorn closes a keep-alive connection a few seconds after its last response, but a connection
that never sends a request, or sends half of one (its headers, or its body, a byte at a time)
has no timer at all: a client could hold every socket of the server. This protocol gives
each connection a deadline for its next whole request, headers and body: from when the
connection opens or its last response ended until the request starts, and from when the request
starts until its body is in. A connection still short of a whole request at its deadline is
closed. A request whose body is in may take as long as its answer takes (a long poll).

And the server holds at most `max_connections` at once: one more is answered 503 and closed at
once, so that the server's file descriptors are never all taken.
"""

from __future__ import annotations

import asyncio
import resource

REQUEST_TIMEOUT = 10.0
"""Seconds a connection may take to send a whole request (or wait idle for its next one)."""

KEEP_ALIVE_TIMEOUT = 5
"""Seconds an idle keep-alive connection stays open after a response (uvicorn's own timer)."""

DEFAULT_MAX_CONNECTIONS = 1_000
"""Connections the server holds open at once (each is a file descriptor)."""

SERVICE_UNAVAILABLE = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n"
                       b"retry-after: 1\r\nconnection: close\r\ncontent-length: 44\r\n\r\n"
                       b"the server has too many connections open now")


def raise_file_limit(needed: int) -> int:
    """Raise this process's soft limit on open files towards `needed` (never past the hard
    limit); the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        soft = wanted
    return soft


def protocol_class(max_connections: int = DEFAULT_MAX_CONNECTIONS) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools' when installed, else h11's), with the deadline and
    the bound on connections."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
    except ImportError:  # no httptools
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base  # type: ignore[assignment]

    class DeadlineProtocol(Base):
        _deadline: asyncio.TimerHandle | None = None

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

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()  # the request's own deadline, for its headers and body

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(REQUEST_TIMEOUT, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            cycle = self.cycle
            answering = (cycle is not None and not cycle.response_complete
                         and not cycle.more_body)  # the whole request is in
            if not answering and not self.transport.is_closing():
                self.transport.close()  # idle, or its headers or body never finished

    return DeadlineProtocol
