"""Connections that cannot be held open for nothing.

uvicorn closes a keep-alive connection a few seconds after its last response, but a connection
that never sends a request (or sends half of one, a byte at a time) has no timer at all: a
client could hold every socket of the server. This protocol gives each connection a deadline
for its next request's headers, from when it opens and after each response; a connection that
has no request in progress at the deadline is closed.
"""

from __future__ import annotations

import asyncio

REQUEST_TIMEOUT = 10.0
"""Seconds a connection may wait, idle or half-way through a request's headers."""

KEEP_ALIVE_TIMEOUT = 5
"""Seconds an idle keep-alive connection stays open after a response (uvicorn's own timer)."""


def protocol_class() -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools' when installed, else h11's), with the deadline."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
    except ImportError:  # no httptools
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base  # type: ignore[assignment]

    class DeadlineProtocol(Base):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

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
            in_progress = self.cycle is not None and not self.cycle.response_complete
            if not in_progress and not self.transport.is_closing():
                self.transport.close()  # idle, or headers never finished

    return DeadlineProtocol
