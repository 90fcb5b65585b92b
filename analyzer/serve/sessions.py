"""Browser sessions behind a token: a random session per sign-in, kept by this server, each
with an expiry and a write key of its own.

A browser signs in once with the server's token (`/login`) and gets a cookie holding a random
session id: never the token, nor anything derived from it, and never the same twice. The
server keeps its sessions in memory (a restart signs everyone out), each until it expires
(`SESSION_LIFETIME` after sign-in) or is ended (sign-out, or a new sign-in by the same
browser).

What a browser cannot separate is ports: a cookie set by 127.0.0.1:8000 goes with every request
to 127.0.0.1, whatever the port (RFC 6265, 8.5), so another server on this machine that the
browser visits receives it. The cookie's name holds the port (`analyzer_session_8000`), so two
servers on one host each find their own, but the value still travels. So a session cookie alone
only reads: a request that changes something (`UNSAFE_METHODS`) signed in by cookie must also
carry the session's write key (`WRITE_KEY_HEADER`), which the sign-in gave to this origin's
pages alone (its script keeps it in the origin's localStorage, which a page of another port
cannot read), and come from this server's own page (its Origin). API clients send the bearer
token instead.

>>> sessions = Sessions(lifetime=60, clock=lambda: 0.0)
>>> started = sessions.start()
>>> sessions.find(started.id) is not None, sessions.find("forged")
(True, None)
>>> sessions.end(started.id), sessions.find(started.id)
(True, None)
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from analyzer.limits import MAX_SESSIONS, SESSION_LIFETIME

SESSION_COOKIE = "analyzer_session"
"""The session cookie's name, before its port (`cookie_name`)."""
WRITE_KEY_HEADER = "X-Analyzer-Write-Key"
"""The header a page's script sends its session's write key in, with every write."""


@dataclass(frozen=True)
class Session:
    """A signed-in browser: its id (the cookie's value; kept here only as a digest), the key its
    pages' writes carry, and when it ends (on this server's monotonic clock)."""

    id: str
    write_key: str
    expires: float


def _digest(session_id: str) -> str:
    """What the server keeps of a session id: a copy of its memory shows no cookie's value."""
    return hashlib.sha256(session_id.encode("utf-8", "surrogateescape")).hexdigest()


class Sessions:
    """The sessions of this server: at most `most` (the oldest ended first), each for
    `lifetime` seconds after its sign-in."""

    def __init__(self, lifetime: float = SESSION_LIFETIME, most: int = MAX_SESSIONS,
                 clock: Callable[[], float] = time.monotonic):
        self.lifetime, self.most, self.clock = lifetime, most, clock
        self.kept: OrderedDict[str, Session] = OrderedDict()
        self.lock = threading.Lock()

    def start(self) -> Session:
        """A new session, random in its id and its write key."""
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32),
                          self.clock() + self.lifetime)
        with self.lock:
            self._forget_expired()
            while len(self.kept) >= self.most:
                self.kept.popitem(last=False)
            self.kept[_digest(session.id)] = session
        return session

    def find(self, session_id: str) -> Session | None:
        """The session of this id, or None: never started here, ended, or expired."""
        with self.lock:
            session = self.kept.get(_digest(session_id))
            if session is not None and session.expires <= self.clock():
                del self.kept[_digest(session_id)]
                return None
            return session

    def end(self, session_id: str) -> bool:
        """End the session of this id (a sign-out); whether there was one."""
        with self.lock:
            return self.kept.pop(_digest(session_id), None) is not None

    def _forget_expired(self) -> None:
        now = self.clock()
        for key in [key for key, session in self.kept.items() if session.expires <= now]:
            del self.kept[key]


def cookie_name(scope) -> str:
    """The session cookie's name on this server: with its port, so that two servers on one
    host never read or overwrite each other's (a browser sends both to each); over HTTPS with
    the `__Host-` prefix, which a browser keeps only from a secure origin, for this host alone.

    >>> cookie_name({"server": ("127.0.0.1", 8000), "scheme": "http"})
    'analyzer_session_8000'
    >>> cookie_name({"server": ("127.0.0.1", 8000), "scheme": "https"})
    '__Host-analyzer_session_8000'
    """
    server = scope.get("server")
    name = SESSION_COOKIE + (f"_{server[1]}" if server and server[1] is not None else "")
    return f"__Host-{name}" if scope.get("scheme") == "https" else name


def cookie_values(headers: list[tuple[bytes, bytes]], name: str) -> list[str]:
    """Every value the request's Cookie header gives `name` (a browser may send a name twice,
    set for two paths, or by another port's server).

    >>> cookie_values([(b"cookie", b"a=1; analyzer_session_80=x; analyzer_session_80=y")],
    ...               "analyzer_session_80")
    ['x', 'y']
    """
    found = []
    for key, value in headers:
        if key != b"cookie":
            continue
        for part in value.split(b";"):
            cookie, _, held = part.strip().partition(b"=")
            if cookie.decode("latin-1") == name:
                found.append(held.decode("latin-1"))
    return found
