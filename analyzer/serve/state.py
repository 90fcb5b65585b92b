"""What the service keeps between requests: the database it serves and the documents of
complete runs (the counting processes are `counting`'s).

No request may stall the others: the event loop only waits. Counting a long text runs in a
counting process; a complete run's documents are made once, by one thread, however many
clients ask for them at once; waiting (a long poll) holds no thread at all.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from analyzer.errors import AnalyzerError
from analyzer.limits import DEFAULT_LOCK_WAIT
from analyzer.store import AnalyzerDatabase, LockWait, WaitBudget, open_db, reconnect

from .waits import budget_of

T = TypeVar("T")


READY_LOCK_WAIT = 0.5
"""Seconds `/readyz` waits for the write lock: long enough for another's short write."""


def served_lock_wait(seconds: float, budget: WaitBudget | None = None) -> LockWait:
    """The server's lock wait (its refusals name `--lock-wait`), within `budget` if given."""
    return LockWait(seconds, "the server's --lock-wait", budget)


class Databases:
    """A fresh connection per request (made cheaply from the one checked at start), so that a
    request sees what run processes committed; closed when the request is done. A database
    deleted or replaced while the server runs is DatabaseGone (503), never made anew. A write
    waits at most `lock_wait` seconds for another process's lock, then is DatabaseBusy (503
    with Retry-After), having changed nothing."""

    def __init__(self, path: Path, lock_wait: float = DEFAULT_LOCK_WAIT):
        self.checked = open_db(path)
        self.checked.conn.close()  # requests open their own; nothing here needs this one
        self.checked.lock_wait = served_lock_wait(lock_wait)  # inherited by each connection

    @property
    def path(self) -> Path:
        return self.checked.path

    def check_present(self) -> None:
        self.checked.check_present()

    def shown(self, error: AnalyzerError) -> AnalyzerError:
        """The error as a client may see it: without this server's paths (`without_paths`)."""
        return without_paths(error, self.path)

    @contextmanager
    def connection(self, lock_wait: float | None = None, budget: WaitBudget | None = None
                   ) -> Iterator[AnalyzerDatabase]:
        """A connection for this request: its writes wait `lock_wait` s if given, else the
        server's --lock-wait, and with a `budget` (the request's), only what is left of it."""
        wait = self.checked.lock_wait
        if lock_wait is not None or budget is not None:
            wait = LockWait(wait.seconds if lock_wait is None else lock_wait, wait.set_by, budget)
        db = reconnect(self.checked, any_thread=True, lock_wait=wait)
        try:
            yield db
        finally:
            db.conn.close()


def without_paths(error: AnalyzerError, path: Path) -> AnalyzerError:
    """The error with the database's path (as given, absolute, or resolved) called by its file
    name, and its folder not named: a client is told which database, never where this server
    keeps it (the library's messages name the whole path, for the command line's user).

    >>> from analyzer.store import DatabaseGone
    >>> str(without_paths(DatabaseGone("the database /srv/a/x.db was deleted"), Path("/srv/a/x.db")))
    'the database x.db was deleted'
    """
    forms = {str(path), str(path.absolute()), str(path.resolve())} - {path.name}
    for form in sorted(forms, key=len, reverse=True):  # the longest first: one holds another
        error = error.renamed(form, path.name)
    folders = {str(path.absolute().parent), str(path.resolve().parent)} - {"/", "."}
    for folder in sorted(folders, key=len, reverse=True):
        error = error.renamed(folder, "the database's folder")
    return error


def database(request: Request) -> Iterator[AnalyzerDatabase]:
    """The request's own connection (a FastAPI dependency of a route that runs on the thread
    pool): opened for it (its writes within the request's wait budget), closed after it."""
    with request.app.state.databases.connection(budget=budget_of(request)) as db:
        yield db


Database = Annotated[AnalyzerDatabase, Depends(database)]


async def in_database(request: Request, function: Callable[[AnalyzerDatabase], T]) -> T:
    """`function(db)` on the thread pool with a connection of its own: how a route that runs on
    the event loop reads the database."""
    def call() -> T:
        with request.app.state.databases.connection(budget=budget_of(request)) as db:
            return function(db)
    return await run_in_threadpool(call)




class Document:
    """A made document: its body, and the entity tag that names that body."""

    def __init__(self, body: Any, identity: bytes):
        self.body = body
        self.etag = f'"{hashlib.sha256(identity).hexdigest()[:32]}"'


def unchanged(request: Request, document: Document) -> bool:
    """Whether the client already holds `document`: its If-None-Match names the document's
    ETag (or is `*`). Answer 304 then."""
    tags = [tag.strip().removeprefix("W/") for tag in request.headers.get("if-none-match", "").split(",")]
    return "*" in tags or document.etag in tags


class Documents:
    """The documents of complete runs (a complete run never changes), each made once: by one
    thread, however many requests ask for it at once (the others wait on the event loop,
    holding no thread), then kept (the most recent `size`)."""

    def __init__(self, size: int = 32):
        self.size = size
        self.items: OrderedDict[tuple, Document] = OrderedDict()
        self.making: dict[tuple, asyncio.Task] = {}

    async def get(self, key: tuple, make: Callable[[], Document]) -> Document:
        if key in self.items:
            self.items.move_to_end(key)
            return self.items[key]
        task = self.making.get(key)
        if task is None:  # made apart from any one request: a client that leaves stops nothing
            task = asyncio.ensure_future(run_in_threadpool(make))
            self.making[key] = task
            task.add_done_callback(lambda done: self._keep(key, done))
        return await asyncio.shield(task)

    def _keep(self, key: tuple, task: asyncio.Task) -> None:
        self.making.pop(key, None)
        if task.cancelled() or task.exception() is not None:
            return  # the next request tries again
        self.items[key] = task.result()
        while len(self.items) > self.size:
            self.items.popitem(last=False)
