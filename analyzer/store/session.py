"""SQLModel sessions over the same SQLite connection that sqlite-utils holds."""

from __future__ import annotations

from sqlalchemy.pool import StaticPool
from sqlite_utils import Database
from sqlmodel import Session, create_engine


def session(db: Database) -> Session:
    """A read session on `db`'s own connection: one connection, one view of the data."""
    engine = getattr(db, "_sqlmodel_engine", None)
    if engine is None:
        engine = create_engine("sqlite://", creator=lambda: db.conn, poolclass=StaticPool)
        db._sqlmodel_engine = engine
    return Session(engine)
