"""Errors as RFC 9457 problem details (`application/problem+json`), carrying the CLI's messages.

404 for what is not there, 409 for a state that forbids the request, 413 for a body over the
limit, 422 for bad input or settings, 401 without the token, 503 (with `Retry-After`) while
the server or the database cannot take the request.
"""

from __future__ import annotations

import math
from http import HTTPStatus

from fastapi.responses import JSONResponse

from analyzer.errors import AnalyzerError, Busy, Conflict, Invalid, NotFound
from analyzer.store import DatabaseGone, DiskFull, QueueStateError, RunNotComplete

PROBLEM = "application/problem+json"


class ServerBusy(Busy):
    """The server has as much work of this kind in hand as it takes at once: try again soon."""

    retry_after = 1


class SettingsRefused(Invalid):
    """A run's settings refused for one reason or more (`errors`, each at its setting): said as
    the first, with every one listed (`refusals_problem`)."""

    def __init__(self, errors: list[AnalyzerError]):
        first = errors[0]
        super().__init__(first.message, **first._all_fields())
        self.errors = errors


class NotRunning(Conflict):
    """A run this server is not running (complete, failed, or another process's)."""


# The library's errors by the status they answer with: one entry per kind (the first match
# wins, so a narrower class comes before its kind).
STATUS_OF: list[tuple[type[AnalyzerError], int, str]] = [
    (DiskFull, 507, "Insufficient storage"),
    (NotFound, 404, "Not found"),
    (RunNotComplete, 409, "Run not complete"),
    (NotRunning, 409, "Run not in progress"),
    (QueueStateError, 409, "Not waiting"),
    (Conflict, 409, "Conflict"),
    (DatabaseGone, 503, "Database gone"),
    (ServerBusy, 503, "Server busy"),
    (Busy, 503, "Database busy"),
    (Invalid, 422, "Unprocessable input"),
]


def problem(status: int, title: str, detail: str, headers: dict | None = None,
            fields: dict | None = None, problems: list[dict[str, str | None]] | None = None
            ) -> JSONResponse:
    """An RFC 9457 problem; `fields` (an error's setting, file, value, ...) as extension members
    (a number JSON cannot write, NaN or infinity, as its text); `problems`, when a request was
    refused for several reasons, each ({field, message}) as the member `problems`."""
    body: dict = {"type": "about:blank", "title": title, "status": status,
                  "detail": writable(detail)}
    if problems is not None:
        body["problems"] = [{"field": item["field"], "message": writable(item["message"] or "")}
                            for item in problems]
    for key, value in (fields or {}).items():
        if isinstance(value, float) and not math.isfinite(value):
            body[key] = str(value)
        elif isinstance(value, str):
            body[key] = writable(value)
        elif isinstance(value, int | float | bool):
            body[key] = value
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def writable(text: str) -> str:
    """`text` as UTF-8 can carry it: a lone surrogate (JSON's `"\\ud800"`, which a request may
    hold and a message quote) as its escape, where it made the answer itself fail (a 500).

    >>> writable("x\\ud800y")
    'x\\\\ud800y'
    """
    return text.encode("utf-8", errors="backslashreplace").decode("utf-8")


def library_problem(error: AnalyzerError) -> JSONResponse:
    """The problem document of a library error, by its kind; settings by their JSON names,
    which are the library's (the default rendering)."""
    status, title = next((status, title) for kind, status, title in STATUS_OF
                         if isinstance(error, kind))
    headers = {"Retry-After": str(error.retry_after)} if isinstance(error, Busy) else None
    return problem(status, title, error.render(), headers=headers, fields=error.fields())


def refusals_problem(errors: list[AnalyzerError]) -> JSONResponse:
    """Several refusals of one request (a run's settings): the first as `library_problem`
    says it (its status, detail and fields), and every one under `problems`, each the setting
    it is about (`field`, null when it is about none) and its message."""
    first = errors[0]
    status, title = next((status, title) for kind, status, title in STATUS_OF
                         if isinstance(first, kind))
    return problem(status, title, first.render(), fields=first.fields(),
                   problems=[{"field": error.setting, "message": error.render()}
                             for error in errors])


def title_of(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
