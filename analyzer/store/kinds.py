"""The words the store keeps in its columns, one definition each (a vocabulary's kind and
algorithm are `analyzer.identity`'s, below the store).

>>> RunStatus.COMPLETE == "complete"
True
"""

from __future__ import annotations

from enum import StrEnum

from analyzer.identity import Algorithm, VocabKind

__all__ = ["IMPORTED_SIZE", "Algorithm", "QueueStatus", "ReplacementTexts", "RunStatus", "VocabKind"]


class RunStatus(StrEnum):
    """Where a run is: recorded as running first, then exactly one of the three ends."""

    RUNNING = "running"
    COMPLETE = "complete"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class QueueStatus(StrEnum):
    """Where a queued run is: waiting its turn, then starting, then exactly one of three ends
    (started: it is a run now, with its own status; cancelled; refused by the run's checks)."""

    WAITING = "waiting"
    STARTING = "starting"
    STARTED = "started"
    CANCELLED = "cancelled"
    REFUSED = "refused"


IMPORTED_SIZE = 0
"""The size an imported vocabulary is stored at: its real size is not known (a count-tokens
endpoint says how many tokens, not how many ids the tokenizer has)."""


class ReplacementTexts(StrEnum):
    """Which texts a vocabulary's per-merge replacement counts were taken on."""

    TRAINED = "trained"
    """The training texts, as each merge was learned (weights applied): who got the merge."""
    MEASURED = "measured"
    """The measured units, replayed: each language's token count after every merge."""
