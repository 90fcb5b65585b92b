"""The store's errors, each of one kind of `analyzer.errors`: a request the database cannot
honour, said in words."""

from analyzer.errors import Busy, Conflict, Invalid, NotFound


class StoreError(Invalid):
    """An unusable database file, a name already taken, a write refused (read-only, newer
    schema), or similar; the message says what there is instead, or what was left unchanged."""


class DatabaseBusy(Busy):
    """Another process held the write lock for longer than the busy timeout."""


class DiskFull(Busy):
    """The disk holding the database has no room: nothing was written."""


class DatabaseGone(Busy):
    """The database file was deleted or replaced while this process had it open: nothing more
    is written to (or read from) what is no longer the file at its path."""


class RunNotComplete(Conflict):
    """The run exists but has no results: it is running, failed or was interrupted."""


__all__ = ["DatabaseBusy", "DatabaseGone", "DiskFull", "NotFound", "RunNotComplete", "StoreError"]
