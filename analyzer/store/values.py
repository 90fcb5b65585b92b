"""How the store writes a few values: dates, new rows' ids, per-unit counts."""

from __future__ import annotations

import sys
from array import array
from datetime import UTC, datetime

MAX_ROW_ID = 2**63 - 1
"""The largest id SQLite stores: a larger one names no row (and must not reach SQLite, which
cannot even compare it)."""


def now() -> str:
    """The time, as every stored date is written: UTC, to the second, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def inserted_id(cursor) -> int:
    """The rowid the INSERT just made."""
    assert cursor.lastrowid is not None, "an INSERT always sets lastrowid"
    return cursor.lastrowid


def pack_counts(units: list[int]) -> bytes:
    counts = array("I", units)
    if sys.byteorder == "big":
        counts.byteswap()
    return counts.tobytes()


def unpack_counts(blob: bytes) -> list[int]:
    counts = array("I")
    counts.frombytes(blob)
    if sys.byteorder == "big":
        counts.byteswap()
    return counts.tolist()
