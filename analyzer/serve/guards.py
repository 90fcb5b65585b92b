"""The ASGI guards every request passes before the application sees it.

- `TrustedHosts`: only the host names the server is bound to (and those the operator lists):
  a page on another site that rebinds its name to 127.0.0.1 (DNS rebinding) is refused.
- `OneOfEach`: a request that repeats a header which must be given once (Host, Origin,
  Content-Type, ...) is refused (400): a guard and the application must never read two
  different values.
- `Authentication`: with a token, every request needs `Authorization: Bearer <token>`
  (compared in constant time), or a browser's session cookie from the sign-in page, which
  alone only reads (`sessions`).
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
from .sessions import WRITE_KEY_HEADER, Session, Sessions, cookie_name, cookie_values

LOGIN_PATH = "/login"
LOGOUT_PATH = "/logout"
SESSION_PATH = "/api/session"
UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
SIGN_IN_SCRIPT = "/static/signin.js"
SIGN_IN_STYLE = "/static/signin.css"
OPEN_PATHS = frozenset({LOGIN_PATH, LOGOUT_PATH, SESSION_PATH, SIGN_IN_SCRIPT, SIGN_IN_STYLE,
                        *PROBES, "/favicon.ico"})
"""What answers without the token: signing in (the page, its script and style) and out (a session
that has expired already still clears its cookie), the probes, and the (empty) icon a browser
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


ONCE = (b"host", b"origin", b"sec-fetch-site", b"content-type", b"content-length",
        b"authorization", WRITE_KEY_HEADER.lower().encode(), b"idempotency-key")
"""Headers a request gives at most once. A guard reads one value and the application may read
another (a dict keeps the last, Starlette's headers the first): Host: evil.example then Host:
127.0.0.1 passed the host check; a second Content-Type let a multipart body skip its check."""


class OneOfEach:
    """Refuse (400) a request that gives one of the `ONCE` headers more than once, before any
    other guard reads it (RFC 9110 5.3: a field that is not a list is sent once; RFC 9112 3.2:
    more than one Host is a 400)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        names = [name for name, _ in scope["headers"] if name in ONCE]
        repeated = sorted({name.decode() for name in names if names.count(name) > 1})
        if not repeated:
            return await self.app(scope, receive, send)
        response = problem(400, "Bad Request", f"the request gives {', '.join(repeated)} more "
                           "than once; each is sent once (two values could be read two ways). "
                           "Nothing was done")
        await response(scope, receive, send)


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


class Authentication:
    """With a token, every request must carry `Authorization: Bearer <token>`, or (a browser,
    after the sign-in page) the cookie of a session this server started (`Sessions`). A
    session cookie alone only reads: a request that changes something, signed in by cookie,
    also needs the session's write key and an Origin that is this server's
    (`cookie_write_refusal`). A browser asking for a page without either is sent to the
    sign-in page; anything else gets 401 (that a request which changes something comes from
    this server's own pages is `SameOrigin`'s, token or not). The `OPEN_PATHS` (sign-in and
    sign-out, the probes) answer without either."""

    def __init__(self, app, token: str, sessions: Sessions):
        self.app, self.token, self.sessions = app, token.encode("utf-8"), sessions

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        scheme, _, value = headers.get(b"authorization", b"").partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(value.strip(), self.token):
            return await self.app(scope, receive, send)
        held = cookie_values(scope["headers"], cookie_name(scope))
        session = next(filter(None, map(self.sessions.find, held)), None)
        if session is not None:
            why = cookie_write_refusal(scope, headers, session)
            if why is None:
                return await self.app(scope, receive, send)
            return await problem(403, "Forbidden", why)(scope, receive, send)
        if (scope["method"] in ("GET", "HEAD") and not scope["path"].startswith("/api/")
                and b"text/html" in headers.get(b"accept", b"")):
            target = scope["path"] + (f"?{scope['query_string'].decode('latin-1')}"
                                      if scope.get("query_string") else "")
            query = {"next": target, **({"ended": "1"} if held else {})}
            redirect = RedirectResponse(f"{LOGIN_PATH}?{urlencode(query)}", 303)
            return await redirect(scope, receive, send)
        ended = ("your session has ended (it expired, was signed out, or the server restarted); "
                 if held else "")
        response = problem(401, "Unauthorized", f"{ended}this server needs a token: send "
                           "Authorization: Bearer <token> (a browser: sign in at /login)",
                           headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


def cookie_write_refusal(scope, headers: dict, session: Session) -> str | None:
    """Why a request signed in by `session`'s cookie may not do what it asks, or None. Reading
    (GET, HEAD) needs the cookie alone; a write also needs the session's write key (which this
    server's pages send from their origin's storage, where no other port's page can read it)
    and an Origin that is this server's (a browser sends one with every write of its pages):
    a cookie replayed by another program, or by another port's server that received it, does
    not write."""
    if scope["method"] not in UNSAFE_METHODS:
        return None
    key = headers.get(WRITE_KEY_HEADER.lower().encode(), b"")
    host = headers.get(b"host", b"")
    origin = headers.get(b"origin")
    if origin in (b"http://" + host, b"https://" + host) and hmac.compare_digest(
            key, session.write_key.encode()):
        return None
    return ("a request that changes something, signed in by the session cookie alone, is "
            "refused: a browser sends that cookie to every port of this host, so it only reads. "
            f"This server's pages send their session's write key ({WRITE_KEY_HEADER}) from "
            "their own origin; if one of them was refused, sign in again at /login. A program "
            "sends Authorization: Bearer <token>")


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

