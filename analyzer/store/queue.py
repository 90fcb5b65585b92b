"""The service's queue of runs: asked for while another run was in progress, they wait here,
in order, so that a restarted server finds them and starts them one by one.

    entry = enqueue_run(db, {"sizes": [512]}, corpus="harbour_town", pin=pin)
    claimed = claim_next(db)                 # the oldest waiting, now starting
    finish_queued(db, claimed.id, QueueStatus.STARTED, run_id=7)

The settings are the request's, as JSON (`RunSettings`' fields); they are checked when asked
for and again when the run starts (the corpus may have changed in between). What the run was
asked on is kept with it (its pin: the corpus's content digest, and a training source's
fingerprint), so that a run whose corpus or source was replaced while it waited is refused
rather than run on the new content.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from analyzer.errors import Conflict

from .db import write_transaction
from .errors import NotFound
from .kinds import QueueStatus
from .models import QueuedRunRead
from .sqlite import Database
from .values import MAX_ROW_ID, inserted_id, now

COLUMNS = "id, settings, corpus, status, submitted, finished, run_id, error"
ACTIVE = (QueueStatus.WAITING, QueueStatus.STARTING)


class QueueStateError(Conflict):
    """A queued run is no longer waiting (cancelling one that has started, say)."""


class ClaimedRun(NamedTuple):
    """A queued run whose turn has come: its entry's id, its settings, and its pin when it was
    queued (None for an entry of an older analyzer)."""

    id: int
    settings: dict[str, Any]
    pin: str | None


def enqueue_run(db: Database, settings: dict[str, Any], corpus: str | None,
                pin: str | None = None) -> QueuedRunRead:
    """Put a run's settings at the end of the queue, with its corpus's name and its `pin`
    (`runs.resolution.pin_of`: what it is asked on, checked when its turn comes; kept in the
    column `content_hash`); its entry, with its position."""
    with write_transaction(db):
        cursor = db.execute("INSERT INTO run_queue (settings, corpus, status, submitted, "
                            "content_hash) VALUES (?, ?, ?, ?, ?)",
                            [json.dumps(settings), corpus, QueueStatus.WAITING, now(), pin])
        queued_id = inserted_id(cursor)
    return get_queued(db, queued_id)


def queued_runs(db: Database, *, active_only: bool = True) -> list[QueuedRunRead]:
    """The queue in order: the entries waiting or starting (`active_only`), or every entry."""
    where = f"WHERE status IN ({', '.join('?' * len(ACTIVE))})" if active_only else ""
    rows = db.execute(f"SELECT {COLUMNS} FROM run_queue {where} ORDER BY id",
                      list(ACTIVE) if active_only else []).fetchall()
    return _with_positions(db, rows)


def get_queued(db: Database, queued_id: int) -> QueuedRunRead:
    """One entry of the queue, whatever its state; NotFound if there is none by that id."""
    row = db.execute(f"SELECT {COLUMNS} FROM run_queue WHERE id = ?",
                     [queued_id]).fetchone() if 1 <= queued_id <= MAX_ROW_ID else None
    if row is None:
        waiting = [entry.id for entry in queued_runs(db)]
        known = (f"; waiting or starting: {', '.join(map(str, waiting))}" if waiting
                 else "; none is waiting")
        raise NotFound(f"no queued run {queued_id}{known}", value=queued_id)
    return _with_positions(db, [row])[0]


def cancel_queued(db: Database, queued_id: int) -> QueuedRunRead:
    """Take a waiting entry out of the queue (cancelled); QueueStateError if it is not waiting."""
    with write_transaction(db):
        entry = get_queued(db, queued_id)
        if entry.status != QueueStatus.WAITING:
            started = (f" as run {entry.run} (DELETE /api/runs/{entry.run} interrupts it)"
                       if entry.run is not None else "")
            raise QueueStateError(f"queued run {queued_id} is {entry.status}{started}; only a "
                                  "waiting one can be cancelled", value=queued_id)
        db.execute("UPDATE run_queue SET status = ?, finished = ? WHERE id = ?",
                   [QueueStatus.CANCELLED, now(), queued_id])
    return get_queued(db, queued_id)


def claim_next(db: Database) -> ClaimedRun | None:
    """The oldest waiting entry, marked starting (in one transaction, so two servers never
    claim one entry); None when nothing waits."""
    with write_transaction(db):
        row = db.execute("SELECT id, settings, content_hash FROM run_queue WHERE status = ? "
                         "ORDER BY id LIMIT 1", [QueueStatus.WAITING]).fetchone()
        if row is None:
            return None
        db.execute("UPDATE run_queue SET status = ? WHERE id = ?", [QueueStatus.STARTING, row[0]])
    return ClaimedRun(row[0], json.loads(row[1]), row[2])


def finish_queued(db: Database, queued_id: int, status: QueueStatus, *, run_id: int | None = None,
                  error: str | None = None) -> None:
    """Say how a starting entry ended: started (as `run_id`) or refused (`error`)."""
    with write_transaction(db):
        db.execute("UPDATE run_queue SET status = ?, run_id = ?, error = ?, finished = ? "
                   "WHERE id = ?", [status, run_id, error, now(), queued_id])


def return_to_waiting(db: Database, queued_id: int) -> None:
    """Put an entry this server was starting back to waiting, at its place (its run could not
    be recorded yet: the database was locked by another process); it is tried again later."""
    with write_transaction(db):
        db.execute("UPDATE run_queue SET status = ? WHERE id = ? AND status = ?",
                   [QueueStatus.WAITING, queued_id, QueueStatus.STARTING])


def requeue_starting(db: Database) -> int:
    """Put entries left starting (a server stopped while it started them) back to waiting, at
    their place; how many. For a server starting on the database."""
    with write_transaction(db):
        return db.execute("UPDATE run_queue SET status = ? WHERE status = ?",
                          [QueueStatus.WAITING, QueueStatus.STARTING]).rowcount


def _with_positions(db: Database, rows: list) -> list[QueuedRunRead]:
    """Read models of rows; a waiting one's position is 1 + the waiting entries before it."""
    waiting = [row[0] for row in db.execute("SELECT id FROM run_queue WHERE status = ? ORDER BY id",
                                            [QueueStatus.WAITING])]
    place = {queued_id: index + 1 for index, queued_id in enumerate(waiting)}
    return [QueuedRunRead(id=row[0], settings=json.loads(row[1]), corpus=row[2],
                          status=QueueStatus(row[3]), submitted=row[4], finished=row[5],
                          run=row[6], error=row[7], position=place.get(row[0]))
            for row in rows]
