"""The words the store keeps in its columns, one definition each.

>>> RunStatus.COMPLETE == "complete"
True
>>> VocabKind.PRODUCTION.trained
False
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """Where a run is: recorded as running first, then exactly one of the three ends."""

    RUNNING = "running"
    COMPLETE = "complete"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class VocabKind(StrEnum):
    """What a vocabulary of a run is.

    A shared vocabulary is trained on every run language (its scope is `shared`), a language's
    own on that language alone (its scope is the language code), a parity-aware one on every
    language with parity-aware merges (scope `parity`); a production tokenizer is measured,
    not trained (its scope is its name).
    """

    SHARED = "shared"
    LANGUAGE = "language"
    PARITY = "parity"
    PRODUCTION = "production"

    @property
    def trained(self) -> bool:
        return self is not VocabKind.PRODUCTION


class ReplacementTexts(StrEnum):
    """Which texts a vocabulary's per-merge replacement counts were taken on."""

    TRAINED = "trained"
    """The training texts, as each merge was learned (weights applied): who got the merge."""
    MEASURED = "measured"
    """The measured units, replayed: each language's token count after every merge."""
