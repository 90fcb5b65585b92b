"""The store's errors: a request the database cannot honour, said in words."""


class StoreError(ValueError):
    """A missing or conflicting name, an unusable file, or similar; the message says what
    there is instead, or what was left unchanged."""


class DatabaseBusy(StoreError):
    """Another process held the write lock for longer than the busy timeout."""


class DiskFull(StoreError):
    """The disk holding the database has no room: nothing was written."""


class NotFound(StoreError):
    """No such corpus, run or vocabulary (the message lists what there is)."""


class RunNotComplete(StoreError):
    """The run exists but has no results: it is running, failed or was interrupted."""
