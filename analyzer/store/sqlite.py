"""sqlite-utils' `Database`, imported with pandas hidden.

sqlite-utils imports pandas at import time when it is installed, only to give `pd.Timestamp`
values a column type, and the store never writes one: that import was 0.4 s of every command
that opens the database (`corpora`, `runs`, `ingest`), for nothing. Every store module takes
`Database` from here; pandas stays importable for what uses it (the metrics, the report).
"""

import sys


def _without_pandas() -> None:
    if "sqlite_utils" in sys.modules or "pandas" in sys.modules:
        return
    sys.modules["pandas"] = None  # type: ignore[assignment]  # `import pandas` fails: skipped
    try:
        import sqlite_utils  # noqa: F401
    finally:
        if "pandas" in sys.modules and sys.modules["pandas"] is None:
            del sys.modules["pandas"]


_without_pandas()

from sqlite_utils import Database  # noqa: E402

__all__ = ["Database"]
