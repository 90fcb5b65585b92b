"""Counts measured elsewhere and imported (a closed model's, from its provider's count-tokens
endpoint, read and checked against the run by `analyzer.external.imported`): stored like a
production tokenizer's counts, of unknown size."""

from __future__ import annotations

from analyzer.external.imported import LIBRARY
from analyzer.identity import VocabKind, VocabularyId
from analyzer.store import IMPORTED_SIZE, VocabularyRecord

from ..plan import Report, SourceTables
from ..resolution import ResolvedRun

KINDS = (VocabKind.IMPORTED,)


def records(run: ResolvedRun, texts: dict[str, list[str]], report: Report | None = None,
            source: SourceTables | None = None) -> list[VocabularyRecord]:
    """Each import's record."""
    return [imported_record(name, source, counts)
            for name, (source, counts) in run.imported.items()]


def imported_record(name: str, source: str, counts: dict[str, list[int]]) -> VocabularyRecord:
    identity = VocabularyId.imported(name)
    return VocabularyRecord(scope=identity.scope, kind=identity.kind, size=IMPORTED_SIZE,
                            counts={IMPORTED_SIZE: counts}, library=LIBRARY, source=source)
