"""sqlite-utils' `Database`, imported without pandas.

sqlite-utils imports pandas at import time when it is installed, only to give `pd.Timestamp`
values a column type, and the store never writes one: that import was 0.4 s of every command
that opens the database (`corpora`, `runs`, `ingest`), for nothing. Every store module takes
`Database` from here; pandas stays importable for what uses it (the metrics, the report).

The thread importing sqlite-utils is refused pandas by a finder of its own; any other thread
imports pandas as ever (hiding it in `sys.modules` would fail another thread's `import pandas`
in that moment). The finder stays in place, idle, once done: taking it out of `sys.meta_path`
could make another thread's import, walking the list, skip the finder after it.
"""

import sys
import threading
from importlib.abc import MetaPathFinder


class _PandasRefused(MetaPathFinder):
    """Refuses pandas to one thread while it imports sqlite-utils; finds nothing otherwise."""

    def __init__(self) -> None:
        self.thread: int | None = threading.get_ident()

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001 - importlib's signature
        if name == "pandas" and threading.get_ident() == self.thread:
            raise ModuleNotFoundError("pandas is not for sqlite-utils here", name=name)
        return None


def _without_pandas() -> None:
    if "sqlite_utils" in sys.modules or "pandas" in sys.modules:
        return
    refused = _PandasRefused()
    sys.meta_path.insert(0, refused)
    try:
        import sqlite_utils  # noqa: F401
    finally:
        refused.thread = None


_without_pandas()

from sqlite_utils import Database  # noqa: E402

__all__ = ["Database"]
