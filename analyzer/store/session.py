"""SQLModel sessions over the same SQLite connection that sqlite-utils holds."""

from __future__ import annotations

from sqlalchemy.pool import StaticPool
from sqlmodel import Session, create_engine

from .db import AnalyzerDatabase


def session(db: AnalyzerDatabase) -> Session:
    """A read session on `db`'s own connection: one connection, one view of the data."""
    if db.engine is None:
        conn = db.conn  # the engine holds the connection, not `db` (no cycle for the GC)
        db.engine = create_engine("sqlite://", creator=lambda: conn, poolclass=StaticPool)
    return Session(db.engine)
