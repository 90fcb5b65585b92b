"""A request's waits: one budget for all of them, never more than `--lock-wait` in all, and
threads of their own, so that no request waits behind another's waits.

Every request gets a `WaitBudget` of the server's lock wait (`RequestWaits`). Each wait on its
way spends from it: a thread for a write (`writing`), the database's write lock (every write
transaction of the request's connections), a run's process ending (`DELETE /api/runs/{id}`).
When it is spent, the request is answered 503 (or, for an interrupt, 202: the run is stopping),
having changed nothing; so N requests queued behind one lock are all answered within about one
lock wait, together, never one after another.

The requests that write run on threads of their own (`WRITE_THREADS`), waited for on the event
loop: however many wait for a lock, the pages and every read keep the server's other threads,
and `GET /` answers at once.

    @router.post("/runs")
    async def start_run(request: Request, ...):
        return await writing(request, lambda budget: ...)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import TypeVar

from fastapi import Request

from analyzer.limits import DEFAULT_LOCK_WAIT
from analyzer.store import WaitBudget

from .problems import ServerBusy

T = TypeVar("T")

WRITE_THREADS = 8
"""Requests that write (start or interrupt a run, cancel a queued one) served at once, each on
a thread of this pool; the others wait for one on the event loop, within their budget."""


class RequestWaits:
    """ASGI middleware: each HTTP request's wait budget (`budget_of`), from its arrival."""

    def __init__(self, app, lock_wait: float = DEFAULT_LOCK_WAIT):
        self.app, self.lock_wait = app, lock_wait

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            scope.setdefault("state", {})["waits"] = WaitBudget(self.lock_wait)
        await self.app(scope, receive, send)


def budget_of(request: Request) -> WaitBudget | None:
    """The request's wait budget (None outside a server: no bound but the connection's)."""
    return request.scope.get("state", {}).get("waits")


class WriteThreads:
    """The threads of the requests that write: `size` of them. A request waits for one on the
    event loop (holding no thread), within its budget; `ServerBusy` when the budget runs out
    first."""

    def __init__(self, size: int = WRITE_THREADS):
        self.size = size
        self.gate = asyncio.Semaphore(size)
        self.threads = ThreadPoolExecutor(size, thread_name_prefix="analyzer-write")

    async def run(self, budget: WaitBudget | None, function: Callable[[], T]) -> T:
        try:
            with budget.waiting() if budget is not None else nullcontext(None) as left:
                async with asyncio.timeout(left):
                    await self.gate.acquire()
        except TimeoutError:
            raise ServerBusy(f"{self.size} requests that write are waiting for the database "
                             "already, and this one waited as long as a request waits (analyzer "
                             "serve --lock-wait); nothing was changed") from None
        try:
            return await asyncio.get_running_loop().run_in_executor(self.threads, function)
        finally:
            self.gate.release()

    def shutdown(self) -> None:
        self.threads.shutdown(wait=False, cancel_futures=True)


async def writing(request: Request, function: Callable[[WaitBudget | None], T]) -> T:
    """`function(budget)` on a thread for writes (`WriteThreads`), with the request's budget:
    its connections' writes wait only what is left of it."""
    budget = budget_of(request)
    return await request.app.state.write_threads.run(budget, lambda: function(budget))
