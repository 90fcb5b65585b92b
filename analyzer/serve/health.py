"""The probes an operator's load balancer or orchestrator asks: `/healthz` (the process answers)
and `/readyz` (the database is there, opens, may be written, its write lock can be had, and
it answers a query). Both answer
without a token (they tell nothing of the data) and hold no thread while they wait.

    curl http://127.0.0.1:8000/healthz     # {"status": "ok"}
    curl http://127.0.0.1:8000/readyz      # {"status": "ready", "database": "analyzer.db"}

The database is named by its file name only, in an answer and in a refusal: these answer
without a token, and a client is not told where the server keeps its files.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from analyzer.errors import AnalyzerError
from analyzer.store import DatabaseBusy

from .problems import problem
from .state import READY_LOCK_WAIT

router = APIRouter(include_in_schema=False)

PROBES = ("/healthz", "/readyz")
"""Paths that answer without a token."""


@router.get("/healthz")
async def healthz() -> dict:
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(request: Request):
    databases = request.app.state.databases

    def check() -> None:
        with databases.connection(lock_wait=READY_LOCK_WAIT) as db:
            db.check_ready()
            db.check_write_lock()  # held by another process: writes would wait, then 503

    try:
        await run_in_threadpool(check)
    except AnalyzerError as error:
        return problem(503, "Not ready", _not_ready(databases.shown(error)),
                       headers={"Retry-After": "10"})
    return {"status": "ready", "database": databases.path.name}


def _not_ready(error: AnalyzerError) -> str:
    if isinstance(error, DatabaseBusy):
        return (f"writes are blocked: another process has held the database's write lock for "
                f"more than {READY_LOCK_WAIT:g} s. Reads still answer; a write waits the server's "
                "--lock-wait, then gets 503")
    return str(error)
