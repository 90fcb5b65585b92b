"""The ASGI application: the JSON API and the pages over one database, with its guards.

- Errors are RFC 9457 problem details carrying the CLI's messages (`problems`).
- Every request passes the guards first (`guards`): its Host, its token, its body's size.
- Pages are sent with a Content-Security-Policy allowing scripts only from this server (and,
  on a run's report, the report's own inline scripts, by hash).
"""

from __future__ import annotations

import contextlib
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from analyzer.errors import SETTING, AnalyzerError
from analyzer.limits import (
    DEFAULT_BODY_LIMIT,
    DEFAULT_CORPUS_LIMIT,
    DEFAULT_COUNTING_PROCESSES,
    DEFAULT_LOCK_WAIT,
    DEFAULT_MAX_QUEUE,
    DEFAULT_UPLOAD_SPACE,
)
from analyzer.settings import SettingsError, describe_bounds, settings_error, settings_errors
from analyzer.version import __version__

from . import api, health, multipart, pages, signin, uploads, workflow
from .access_log import AccessLog
from .bodies import StrictJSON
from .counting import CountingProcesses
from .guards import (
    LOOPBACK_NAMES,
    Authentication,
    BodyLimit,
    HeadAsGet,
    OneOfEach,
    SameOrigin,
    SecurityHeaders,
    TrustedHosts,
)
from .idempotency import Replays
from .multipart import WholeForms
from .problems import SettingsRefused, library_problem, problem, refusals_problem, title_of
from .runner import RunManager
from .sessions import Sessions
from .state import Databases, Documents
from .uploads import CORPORA_PATH, UploadGate, Uploads
from .waits import RequestWaits, WriteThreads


def create_app(db_path: Path, *, token: str | None = None,
               body_limit: int = DEFAULT_BODY_LIMIT,
               allowed_hosts: frozenset[str] | None = LOOPBACK_NAMES,
               counting_processes: int = DEFAULT_COUNTING_PROCESSES,
               log_format: str = "none", max_queue: int = DEFAULT_MAX_QUEUE,
               corpus_limit: int = DEFAULT_CORPUS_LIMIT,
               upload_space: int = DEFAULT_UPLOAD_SPACE,
               lock_wait: float = DEFAULT_LOCK_WAIT) -> FastAPI:
    """The service over the database at `db_path` (created and migrated if new). It answers
    requests whose Host names one of `allowed_hosts` (None: any, for a server behind a token
    on every address); at most `counting_processes` requests count long texts at once; each
    request is logged on stderr in `log_format` (text, json; none: not logged); at most
    `max_queue` runs wait in the queue; an uploaded corpus has at most `corpus_limit` bytes,
    and the uploads being read take at most `upload_space` bytes of temporary disk; a
    write waits at most `lock_wait` seconds for another process's lock (then 503)."""
    databases = Databases(db_path, lock_wait)  # a bad database is refused now, not on the first request
    runs = RunManager(databases.checked, max_queue=max_queue, json_log=log_format == "json")
    counting = CountingProcesses(counting_processes)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        runs.resume()  # runs queued before a restart start in their turn
        yield
        runs.shutdown()  # a run in progress is interrupted (marked so), not left behind
        counting.shutdown()
        app.state.write_threads.shutdown()

    # No /docs or /redoc: FastAPI serves them from a CDN, and this service works offline.
    # The schema is at /openapi.json.
    app = FastAPI(title="analyzer", version=__version__, lifespan=lifespan, docs_url=None,
                  redoc_url=None,
                  description="What tokenization costs each language: stored runs, tokenization "
                              "and comparison, and runs started on this server.")
    app.state.databases = databases
    app.state.runs = runs
    app.state.counting = counting
    app.state.documents = Documents()
    app.state.uploads = Uploads(corpus_limit, upload_space)
    app.include_router(api.router)
    app.include_router(uploads.router)
    app.include_router(workflow.router)
    app.include_router(pages.router)
    app.include_router(signin.router)
    app.include_router(health.router)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError):
        errors = list(error.errors())
        if (request.url.path == api.RUNS_PATH and errors and isinstance(error.body, dict)
                and all(tuple(e["loc"][:1]) == ("body",) and len(e["loc"]) > 1 for e in errors)):
            # A run's settings: said as the command line says them (their definition's
            # bounds), every one, with what the server's checks refuse of the others.
            refused = {e["loc"][1] for e in errors}
            values = {name: value for name, value in error.body.items() if name not in refused}
            said: list[AnalyzerError] = [sizes_in_words(e)
                                         for e in settings_errors(errors, prefix=("body",))]
            with contextlib.suppress(AnalyzerError):  # else the definition's refusals alone
                said = await run_in_threadpool(api.every_refusal, request, values, said)
            return refusals_problem(said)
        if request.url.path == api.RUNS_PATH and errors and tuple(errors[0]["loc"][:1]) == ("body",):
            return library_problem(settings_error(errors, prefix=("body",)))  # not an object
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors)
        return problem(422, "Unprocessable input", details)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException):
        detail = multipart.unreadable(error) or str(error.detail)  # the form parser's why
        return problem(error.status_code, title_of(error.status_code), detail,
                       headers=getattr(error, "headers", None))

    @app.exception_handler(AnalyzerError)
    async def library_error(request: Request, error: AnalyzerError):
        if isinstance(error, SettingsRefused):
            return refusals_problem(error.errors)  # each said already as a client may see it
        return library_problem(databases.shown(error))  # no server path in what clients see

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception):
        return problem(500, "Internal error", f"an unexpected error ({type(error).__name__}); "
                       "this is a bug, please report it")

    app.state.token = token
    app.state.sessions = Sessions()
    app.state.write_threads = WriteThreads()
    app.state.replays = Replays()
    # Added innermost first: a request meets AccessLog, SecurityHeaders, OneOfEach,
    # TrustedHosts, SameOrigin, HeadAsGet, Authentication, BodyLimit, UploadGate, StrictJSON,
    # WholeForms, then RequestWaits.
    app.add_middleware(RequestWaits, lock_wait=lock_wait)  # every wait within --lock-wait
    app.add_middleware(WholeForms)  # a form cut before its closing boundary: 400
    app.add_middleware(StrictJSON)  # a JSON key given twice: 422
    app.add_middleware(UploadGate, uploads=app.state.uploads)  # 503 before the body is read
    app.add_middleware(BodyLimit, limit=body_limit, streamed={CORPORA_PATH: corpus_limit})
    if token:
        app.add_middleware(Authentication, token=token, sessions=app.state.sessions)
    app.add_middleware(HeadAsGet)
    app.add_middleware(SameOrigin)  # a write from another site's page: 403, token or not
    if allowed_hosts is not None:
        app.add_middleware(TrustedHosts, allowed=frozenset(allowed_hosts))
    app.add_middleware(OneOfEach)  # a header two guards could read two ways: 400
    app.add_middleware(SecurityHeaders)  # every answer, a 401 included
    if log_format != "none":
        app.add_middleware(AccessLog, fmt=log_format)  # the outermost: every request
    return app


def sizes_in_words(error: SettingsError) -> SettingsError:
    """A size that is no number (`none`, `abc`) said in words, where pydantic would say it
    cannot parse an integer: what a size is, and how to train nothing (no size; the form
    takes `none` alone for that, as `--vocab none`).

    >>> str(sizes_in_words(SettingsError("{setting} none: Input should be a valid integer",
    ...                                  setting="sizes", value="none"))).split(";")[0]
    'sizes none: a size is a whole number of tokens from 256 to 16,777,216'
    """
    if error.setting != "sizes" or not isinstance(error.value, str):
        return error
    return SettingsError(f"{SETTING} {error.value}: a size is a whole number of tokens "
                         f"{describe_bounds('sizes')}; to train nothing, give no size (or none "
                         "alone)", setting="sizes", value=error.value)
