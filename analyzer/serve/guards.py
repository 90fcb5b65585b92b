"""The ASGI guards every request passes before the application sees it.

- `TrustedHosts`: only the host names the server is bound to (and those the operator lists):
  a page on another site that rebinds its name to 127.0.0.1 (DNS rebinding) is refused.
- `BearerToken`: with a token, every request needs `Authorization: Bearer <token>` (compared in
  constant time), or a browser's session cookie from the login page.
- `BodyLimit`: request bodies over the limit get 413 (an upload's limit is its own, and its
  body is streamed on, never held here).
- `SameOrigin`: a request that changes something (POST, PUT, PATCH, DELETE) from a page of
  another origin is refused (403), with or without a token, before its body is read.
- `HeadAsGet`: HEAD on any GET route, answered as GET without the body.
- `SecurityHeaders`: `X-Content-Type-Options: nosniff` and `Referrer-Policy: same-origin` on
  every answer.
"""

from __future__ import annotations

import hmac
from urllib.parse import urlencode

from fastapi.responses import RedirectResponse

from .health import PROBES
from .problems import problem

SESSION_COOKIE = "analyzer_session"
LOGIN_PATH = "/login"
UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
OPEN_PATHS = frozenset({LOGIN_PATH, *PROBES, "/favicon.ico"})
"""What answers without the token: the sign-in page, the probes, and the (empty) icon a browser
asks for on the sign-in page, which would otherwise be a 401 in its console."""


def host_name(header: bytes) -> str:
    """The name in a Host header, without its port, lower-case.

    >>> host_name(b"LocalHost:8000"), host_name(b"[::1]:8000"), host_name(b"127.0.0.1")
    ('localhost', '::1', '127.0.0.1')
    """
    text = header.decode("latin-1").strip().lower()
    if text.startswith("["):  # an IPv6 literal: [::1]:8000
        return text[1:].partition("]")[0]
    return text.rpartition(":")[0] if text.count(":") == 1 else text


class TrustedHosts:
    """Refuse a request whose Host header names none of `allowed` (400), before anything else
    reads it: the defence against DNS rebinding, which a browser's same-origin rule does not
    give a server on 127.0.0.1."""

    def __init__(self, app, allowed: frozenset[str]):
        self.app, self.allowed = app, allowed

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        header = dict(scope["headers"]).get(b"host", b"")
        if host_name(header) in self.allowed:
            return await self.app(scope, receive, send)
        shown = header.decode("latin-1")[:100]
        response = problem(400, "Bad Request", f"this server does not answer to the host name "
                           f"{shown!r} (it answers to {', '.join(sorted(self.allowed))}); a page "
                           "that reached it under another name is refused. The operator can add "
                           "a name with analyzer serve --allow-host NAME")
        await response(scope, receive, send)


class BodyLimit:
    """Refuse request bodies over `limit` bytes with 413, by Content-Length or as they stream.

    The paths in `streamed` (uploads) have limits of their own and must declare their length
    (411 otherwise): one over its limit is refused before any of it is read, and one within is
    passed on as it comes (the server reads no more than the declared length)."""

    def __init__(self, app, limit: int, streamed: dict[str, int] | None = None):
        self.app, self.limit, self.streamed = app, limit, streamed or {}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length")
        if scope["path"] in self.streamed and scope["method"] in UNSAFE_METHODS:
            limit = self.streamed[scope["path"]]
            if declared is None or not declared.isdigit():
                response = problem(411, "Length Required", "an upload must say its length "
                                   "(Content-Length); browsers and HTTP libraries do when sending "
                                   "a file")
                return await response(scope, receive, send)
            if int(declared) > limit:
                return await self._refuse(scope, receive, send, limit, " for an uploaded corpus "
                                          "(the operator sets it: analyzer serve --max-corpus-bytes)")
            return await self.app(scope, receive, send)
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await self._refuse(scope, receive, send, self.limit)
        # Read the body here (it is at most `limit` bytes), then hand it on: an app that
        # finds a body too large halfway through would report a parse error instead.
        messages, seen = [], 0
        while True:
            message = await receive()
            messages.append(message)
            seen += len(message.get("body", b""))
            if seen > self.limit:
                return await self._refuse(scope, receive, send, self.limit)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break

        async def replay():
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    @staticmethod
    async def _refuse(scope, receive, send, limit: int, which: str = ""):
        response = problem(413, "Request body too large",
                           f"the request body is over the limit of {limit:,} bytes{which}")
        await response(scope, receive, send)


def session_value(token: str) -> str:
    """What a browser's session cookie holds: derived from the token (never the token itself),
    so the cookie proves the token was given without being it."""
    return hmac.new(token.encode("utf-8"), b"analyzer browser session", "sha256").hexdigest()


class BearerToken:
    """Every request must carry `Authorization: Bearer <token>`, or (a browser, after the login
    page) the session cookie. A browser asking for a page without either is sent to the login
    page; anything else gets 401 (that a request which changes something comes from this
    server's own pages is `SameOrigin`'s, token or not). The `OPEN_PATHS` (the login page, the
    probes) answer without either."""

    def __init__(self, app, token: str):
        self.app, self.token = app, token.encode("utf-8")
        self.session = session_value(token).encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        scheme, _, value = headers.get(b"authorization", b"").partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(value.strip(), self.token):
            return await self.app(scope, receive, send)
        if hmac.compare_digest(_cookie(headers, SESSION_COOKIE), self.session):
            return await self.app(scope, receive, send)
        if (scope["method"] in ("GET", "HEAD") and not scope["path"].startswith("/api/")
                and b"text/html" in headers.get(b"accept", b"")):
            target = scope["path"] + (f"?{scope['query_string'].decode()}"
                                      if scope.get("query_string") else "")
            redirect = RedirectResponse(f"{LOGIN_PATH}?{urlencode({'next': target})}", 303)
            return await redirect(scope, receive, send)
        response = problem(401, "Unauthorized", "this server needs a token: send "
                           "Authorization: Bearer <token> (a browser: sign in at /login)",
                           headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


def _cookie(headers: dict, name: str) -> bytes:
    for part in headers.get(b"cookie", b"").split(b";"):
        key, _, value = part.strip().partition(b"=")
        if key == name.encode():
            return value
    return b""


def foreign_origin(headers: dict) -> str | None:
    """Why a request comes from a page of another origin, or None when it does not (or is not
    a browser's: curl and the command line send neither header). A browser sends `Origin` on
    every POST, even `fetch(..., {mode: "no-cors"})` and a plain form's, and `null` from an
    opaque origin (a sandboxed frame, a data: URL); `Sec-Fetch-Site` says the same in its words.

    >>> foreign_origin({b"host": b"127.0.0.1:8000", b"origin": b"http://127.0.0.1:8000"})
    >>> foreign_origin({b"host": b"127.0.0.1:8000"})
    >>> foreign_origin({b"host": b"127.0.0.1:8000", b"origin": b"https://evil.example"})
    "its Origin is 'https://evil.example'"
    >>> foreign_origin({b"host": b"localhost:8000", b"sec-fetch-site": b"same-site"})
    "its Sec-Fetch-Site is 'same-site'"
    """
    origin = headers.get(b"origin")
    host = headers.get(b"host", b"")
    if origin is not None and origin not in (b"http://" + host, b"https://" + host):
        return f"its Origin is {origin.decode('latin-1')[:100]!r}"
    site = headers.get(b"sec-fetch-site", b"").lower()
    if site in (b"cross-site", b"same-site"):
        return f"its Sec-Fetch-Site is {site.decode('latin-1')!r}"
    return None


class SameOrigin:
    """Refuse a request that changes something (`UNSAFE_METHODS`) from a page of another origin
    (403), before its body is read, whether or not the server has a token. A page on any site
    can send a POST to 127.0.0.1 (a form, or `fetch` in `no-cors` mode, which needs no
    preflight); it cannot read the answer, but without this the write would be done."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] not in UNSAFE_METHODS:
            return await self.app(scope, receive, send)
        why = foreign_origin(dict(scope["headers"]))
        if why is None:
            return await self.app(scope, receive, send)
        response = problem(403, "Forbidden", f"a request that changes something must come from "
                           f"this server's own pages or a client that is not a browser page; "
                           f"this one comes from a page of another site ({why})")
        await response(scope, receive, send)


class HeadAsGet:
    """HEAD on a GET route: the GET's status and headers, without the body (RFC 9110 9.3.2).
    FastAPI routes answer only the methods they declare, so HEAD was a 405."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "HEAD":
            return await self.app(scope, receive, send)

        async def headers_only(message):
            if message["type"] == "http.response.body":
                if not message.get("more_body", False):
                    await send({"type": "http.response.body", "body": b""})
                return
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


class SecurityHeaders:
    """Every response says what it is and no more: `X-Content-Type-Options: nosniff` (a JSON
    or CSV answer is never sniffed into a page), and `Referrer-Policy: same-origin` where a
    route set none stricter (a link out of a page does not tell the other site this server's
    address and paths)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def sending(message):
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.lower() != b"x-content-type-options"]
                added = [(b"x-content-type-options", b"nosniff")]
                if not any(k.lower() == b"referrer-policy" for k, _ in headers):
                    added.append((b"referrer-policy", b"same-origin"))  # unless stricter
                message = {**message, "headers": [*headers, *added]}
            await send(message)

        await self.app(scope, receive, sending)

