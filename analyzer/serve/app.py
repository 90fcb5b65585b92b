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
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from analyzer import __version__
from analyzer.corpus import CorpusError
from analyzer.external import TokenizerError
from analyzer.queries import QueryError
from analyzer.runs import RunError
from analyzer.store import DatabaseBusy, NotFound, RunNotComplete, StoreError, open_db, reconnect

from .runner import RunConflict, RunManager

DEFAULT_BODY_LIMIT = 1_000_000
"""Bytes a request body may have (tokenize and compare texts included)."""

PROBLEM = "application/problem+json"


def problem(status: int, title: str, detail: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"type": "about:blank", "title": title, "status": status, "detail": detail},
                        status_code=status, media_type=PROBLEM, headers=headers)


# Errors of the library, by the status they answer with (the first match wins).
STATUS_OF = [
    (NotFound, 404, "Not found"),
    (RunNotComplete, 409, "Run not complete"),
    (RunConflict, 409, "A run is in progress"),
    (DatabaseBusy, 503, "Database busy"),
    ((RunError, StoreError, CorpusError, TokenizerError, QueryError), 422, "Unprocessable input"),
]


class Databases:
    """A fresh connection per request (made cheaply from the one checked at start): SQLite
    connections belong to their thread, and a request sees what run processes committed."""

    def __init__(self, path: Path):
        self.checked = open_db(path)
        self.checked.conn.close()  # requests open their own; nothing here needs this one

    def get(self):
        return reconnect(self.checked)


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


class BearerToken:
    """Every request must carry `Authorization: Bearer <token>`."""

    def __init__(self, app, token: str):
        self.app, self.token = app, token.encode("utf-8")

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            scheme, _, value = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self.token):
                response = problem(401, "Unauthorized", "this server needs a token: send "
                                   "Authorization: Bearer <token>",
                                   headers={"WWW-Authenticate": "Bearer"})
                return await response(scope, receive, send)
        await self.app(scope, receive, send)


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

    app = FastAPI(title="analyzer", version=__version__, lifespan=lifespan,
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

    for kinds, status, title in STATUS_OF:
        for kind in kinds if isinstance(kinds, tuple) else (kinds,):
            app.add_exception_handler(kind, _handler(status, title))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception):
        return problem(500, "Internal error", f"an unexpected error ({type(error).__name__}); "
                       "this is a bug, please report it")

    app.add_middleware(BodyLimit, limit=body_limit)
    if token:
        app.add_middleware(BearerToken, token=token)
    return app


def _handler(status: int, title: str):
    async def handle(request: Request, error: Exception):
        return problem(status, title, str(error))
    return handle


def _title(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
