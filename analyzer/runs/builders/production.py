"""Production tokenizers, measured, not trained: counted by their own libraries on every
measured unit of every language, stored like a trained vocabulary's counts, without merges."""

from __future__ import annotations

import time

from analyzer.identity import VocabKind, VocabularyId
from analyzer.store import VocabularyRecord

from ..plan import Report, SourceTables, count_joined, joined_texts
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
    # Special tokens the library adds to each text: the same for every text it counts.
    added = tokenizer.specials if run.settings.special_tokens else 0
    counts = {lang: [n + added for n in tokenizer.count([texts[lang][u] for u in run.measured_units])]
              for lang in run.languages}
    joined = count_joined(joined_texts(texts, run.languages, run.measured_units, run.joined_ids),
                          lambda found: {tokenizer.size: [n + added for n in tokenizer.count(found)]},
                          [tokenizer.size])
    if report:
        report(tokenizer.name, "done", 1, 1)
    framing = tokenizer.entry.framing if tokenizer.entry else None
    identity = VocabularyId.production(tokenizer.name)
    return VocabularyRecord(scope=identity.scope, kind=identity.kind, size=tokenizer.size,
                            counts={tokenizer.size: counts}, joined=joined,
                            special_tokens=tokenizer.specials,
                            seconds=round(time.perf_counter() - start, 3),
                            library=tokenizer.library, source=tokenizer.source,
                            framing=framing.tokens if framing else None,
                            framing_basis=str(framing.basis) if framing else None)

