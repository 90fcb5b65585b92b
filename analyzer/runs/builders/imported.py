"""Counts measured elsewhere and imported (a closed model's, from its provider's count-tokens
endpoint, read and checked against the run by `analyzer.external.imported`): stored like a
production tokenizer's counts, of unknown size."""

from __future__ import annotations

from analyzer.errors import SETTING, setting
from analyzer.external.imported import LIBRARY
from analyzer.identity import VocabKind, VocabularyId
from analyzer.settings import CountConvention, RunSettings
from analyzer.store import IMPORTED_SIZE, VocabularyRecord

from ..plan import Report, SourceTables
from ..resolution import invalid
from ..resolved import ResolvedRun
from ..spread import Spread

KINDS = (VocabKind.IMPORTED,)
MEASURED_ALONE = ("counts",)
"""A run of these settings alone, with no sizes, measures vocabularies all the same."""


def check(settings: RunSettings, run: ResolvedRun, taken: set[str]) -> tuple[dict, dict]:
    """Each counts file read and checked against the run (every measured unit of every run
    language counted), before anything is stored; its name not already a vocabulary's.
    Imported counts are one per unit: they cannot be joined."""
    specs, corpus, languages, measured = (settings.counts, run.corpus, run.languages,
                                          run.measured_units)
    if specs and settings.count != CountConvention.UNITS:
        raise invalid("count", settings.count,
                      f"{SETTING} joined counts each language's units joined into one text; "
                      f"{setting('counts')} gives counts of each unit, which cannot be joined: "
                      "run them with --count units")
    from analyzer.external.imported import read_counts

    found: dict = {}
    for spec in specs:
        counts = read_counts(spec)  # CountsError, naming the file and line
        if counts.name in taken or counts.name in found:
            raise invalid("counts", spec, f"{SETTING} {spec}: the name {counts.name!r} is "
                          "already used in this run; give the counts another name")
        found[counts.name] = (counts.source,
                              counts.counts_for(languages, measured, corpus.units))
    taken.update(found)
    return {"counts": found}, {}


def records(run: ResolvedRun, texts: dict[str, list[str]], report: Report | None = None,
            source: SourceTables | None = None, spread: Spread | None = None
            ) -> list[VocabularyRecord]:
    """Each import's record."""
    return [imported_record(name, source, counts)
            for name, (source, counts) in run.made["counts"].items()]


def imported_record(name: str, source: str, counts: dict[str, list[int]]) -> VocabularyRecord:
    identity = VocabularyId.imported(name)
    return VocabularyRecord(scope=identity.scope, kind=identity.kind, size=IMPORTED_SIZE,
                            counts={IMPORTED_SIZE: counts}, library=LIBRARY, source=source)
