"""The probes an operator's load balancer or orchestrator asks: `/healthz` (the process answers)
and `/readyz` (the database is there, opens, may be written and answers a query). Both answer
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

from .problems import problem

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
        with databases.connection() as db:
            db.check_ready()

    try:
        await run_in_threadpool(check)
    except AnalyzerError as error:
        return problem(503, "Not ready", str(databases.shown(error)),
                       headers={"Retry-After": "10"})
    return {"status": "ready", "database": databases.path.name}
