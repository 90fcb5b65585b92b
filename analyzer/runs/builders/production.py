"""Production tokenizers, measured, not trained: counted by their own libraries on every
measured unit of every language, stored like a trained vocabulary's counts, without merges."""

from __future__ import annotations

import time

from analyzer.identity import VocabKind, VocabularyId
from analyzer.store import VocabularyRecord

from ..plan import Report, SourceTables
from ..resolution import ResolvedRun

KINDS = (VocabKind.PRODUCTION,)


def records(run: ResolvedRun, texts: dict[str, list[str]], report: Report | None = None,
            source: SourceTables | None = None) -> list[VocabularyRecord]:
    """Each production tokenizer's record."""
    return [measure_tokenizer(tokenizer, run, texts, report) for tokenizer in run.tokenizers]


def measure_tokenizer(tokenizer, run: ResolvedRun, texts: dict[str, list[str]],
                      report: Report | None) -> VocabularyRecord:
    """Count every measured unit of every language with a production tokenizer's own encoder;
    stored like a vocabulary of the run at its real size, without merges."""
    if report:
        report(tokenizer.name, "count", 0, 1)
    start = time.perf_counter()
    counts = {lang: tokenizer.count([texts[lang][u] for u in run.measured_units])
              for lang in run.languages}
    if report:
        report(tokenizer.name, "done", 1, 1)
    framing = tokenizer.entry.framing if tokenizer.entry else None
    identity = VocabularyId.production(tokenizer.name)
    return VocabularyRecord(scope=identity.scope, kind=identity.kind, size=tokenizer.size,
                            counts={tokenizer.size: counts},
                            seconds=round(time.perf_counter() - start, 3),
                            library=tokenizer.library, source=tokenizer.source,
                            framing=framing.tokens if framing else None,
                            framing_basis=str(framing.basis) if framing else None)

