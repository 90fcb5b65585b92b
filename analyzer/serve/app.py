"""The ASGI application: the JSON API and the pages over one database, with its guards.

- Errors are RFC 9457 problem details (`application/problem+json`) carrying the CLI's messages:
  404 for what is not there, 409 for a run that is not complete or already in progress, 413
  for a body over the limit, 422 for bad input or settings, 401 without the token.
- With a token, every request needs `Authorization: Bearer <token>` (compared in constant time).
- Pages are sent with a Content-Security-Policy allowing scripts only from this server (and,
  on a run's report, the report's own inline scripts, by hash).
"""

from __future__ import annotations

import hmac
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Annotated
from urllib.parse import urlencode

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.exceptions import HTTPException

from analyzer import __version__
from analyzer.errors import AnalyzerError, Busy, Conflict, Invalid, NotFound
from analyzer.store import AnalyzerDatabase, DiskFull, RunNotComplete, open_db, reconnect

from .runner import RunManager

DEFAULT_BODY_LIMIT = 1_000_000
"""Bytes a request body may have (tokenize and compare texts included)."""

PROBLEM = "application/problem+json"


def problem(status: int, title: str, detail: str, headers: dict | None = None,
            fields: dict | None = None) -> JSONResponse:
    """An RFC 9457 problem; `fields` (an error's setting, file, value, ...) as extension members."""
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    body.update({key: value for key, value in (fields or {}).items()
                 if isinstance(value, str | int | float | bool)})
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


# The library's errors by the status they answer with: one entry per kind (the first match
# wins, so a narrower class comes before its kind).
STATUS_OF: list[tuple[type[AnalyzerError], int, str]] = [
    (DiskFull, 507, "Insufficient storage"),
    (NotFound, 404, "Not found"),
    (RunNotComplete, 409, "Run not complete"),
    (Conflict, 409, "A run is in progress"),
    (Busy, 503, "Database busy"),
    (Invalid, 422, "Unprocessable input"),
]


class Databases:
    """A fresh connection per request (made cheaply from the one checked at start), so that a
    request sees what run processes committed; closed when the request is done."""

    def __init__(self, path: Path):
        self.checked = open_db(path)
        self.checked.conn.close()  # requests open their own; nothing here needs this one

    @contextmanager
    def connection(self) -> Iterator[AnalyzerDatabase]:
        db = reconnect(self.checked, any_thread=True)
        try:
            yield db
        finally:
            db.conn.close()


def database(request: Request) -> Iterator[AnalyzerDatabase]:
    """The request's own connection (a FastAPI dependency): opened for it, closed after it."""
    with request.app.state.databases.connection() as db:
        yield db


Database = Annotated[AnalyzerDatabase, Depends(database)]


class Cache:
    """A small least-recently-used cache of loaded vocabularies and tokenizers."""

    def __init__(self, size: int = 16):
        self.size = size
        self.items: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def peek(self, key):
        """The value if it is loaded, else None (without loading it)."""
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        return None

    def get(self, key, load):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = load()
        with self.lock:
            self.items[key] = value
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return value


class BodyLimit:
    """Refuse request bodies over `limit` bytes with 413, by Content-Length or as they stream."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await self._refuse(scope, receive, send)
        # Read the body here (it is at most `limit` bytes), then hand it on: an app that
        # finds a body too large halfway through would report a parse error instead.
        messages, seen = [], 0
        while True:
            message = await receive()
            messages.append(message)
            seen += len(message.get("body", b""))
            if seen > self.limit:
                return await self._refuse(scope, receive, send)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break

        async def replay():
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope, receive, send):
        response = problem(413, "Request body too large",
                           f"the request body is over the limit of {self.limit:,} bytes")
        await response(scope, receive, send)


SESSION_COOKIE = "analyzer_session"
LOGIN_PATH = "/login"
UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


def session_value(token: str) -> str:
    """What a browser's session cookie holds: derived from the token (never the token itself),
    so the cookie proves the token was given without being it."""
    return hmac.new(token.encode("utf-8"), b"analyzer browser session", "sha256").hexdigest()


class BearerToken:
    """Every request must carry `Authorization: Bearer <token>`, or (a browser, after the login
    page) the session cookie. A browser asking for a page without either is sent to the login
    page; anything else gets 401. A cookie-borne request that changes something must come from
    this server's own pages (its Origin, when the browser sends one, is this server)."""

    def __init__(self, app, token: str):
        self.app, self.token = app, token.encode("utf-8")
        self.session = session_value(token).encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] == LOGIN_PATH:
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        scheme, _, value = headers.get(b"authorization", b"").partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(value.strip(), self.token):
            return await self.app(scope, receive, send)
        if hmac.compare_digest(_cookie(headers, SESSION_COOKIE), self.session):
            if scope["method"] in UNSAFE_METHODS and not _same_origin(headers):
                response = problem(403, "Forbidden", "a request that changes something must "
                                   "come from this server's own pages (its Origin differs)")
                return await response(scope, receive, send)
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


def _same_origin(headers: dict) -> bool:
    origin = headers.get(b"origin")
    if origin is None:
        return True  # not a browser's cross-site request (browsers send Origin on those)
    host = headers.get(b"host", b"")
    return origin in (b"http://" + host, b"https://" + host)


class SecurityHeaders:
    """Every response says what it is and no more: `X-Content-Type-Options: nosniff` (a JSON
    or CSV answer is never sniffed into a page)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def sending(message):
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.lower() != b"x-content-type-options"]
                message = {**message, "headers": [*headers, (b"x-content-type-options", b"nosniff")]}
            await send(message)

        await self.app(scope, receive, sending)


def create_app(db_path: Path, *, token: str | None = None,
               body_limit: int = DEFAULT_BODY_LIMIT) -> FastAPI:
    """The service over the database at `db_path` (created and migrated if new)."""
    from . import api, pages

    databases = Databases(db_path)  # a bad database is refused now, not on the first request
    runs = RunManager(db_path)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        runs.shutdown()  # a run in progress is interrupted (marked so), not left behind

    # No /docs or /redoc: FastAPI serves them from a CDN, and this service works offline.
    # The schema is at /openapi.json.
    app = FastAPI(title="analyzer", version=__version__, lifespan=lifespan, docs_url=None,
                  redoc_url=None,
                  description="What tokenization costs each language: stored runs, tokenization "
                              "and comparison, and runs started on this server.")
    app.state.databases = databases
    app.state.runs = runs
    app.state.cache = Cache()
    app.include_router(api.router)
    app.include_router(pages.router)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError):
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        return problem(422, "Unprocessable input", details)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException):
        return problem(error.status_code, _title(error.status_code), str(error.detail),
                       headers=getattr(error, "headers", None))

    @app.exception_handler(AnalyzerError)
    async def library_error(request: Request, error: AnalyzerError):
        status, title = next((status, title) for kind, status, title in STATUS_OF
                             if isinstance(error, kind))
        # Settings by their JSON names, which are the library's: the default rendering.
        return problem(status, title, error.render(), fields=error.fields())

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception):
        return problem(500, "Internal error", f"an unexpected error ({type(error).__name__}); "
                       "this is a bug, please report it")

    app.state.token = token
    app.add_middleware(BodyLimit, limit=body_limit)
    if token:
        app.add_middleware(BearerToken, token=token)
    app.add_middleware(SecurityHeaders)  # the outermost: every answer, a 401 included
    return app


def _title(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
