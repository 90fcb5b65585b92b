"""Production tokenizers, measured, not trained: counted by their own libraries on every
measured unit of every language, stored like a trained vocabulary's counts, without merges;
with what the field reports of them beside (`analyzer.external.vocabulary`): the words their
tokens split, the scripts of their vocabularies, and how much of each other's they share."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass

from analyzer.corpus.languages import separates_words
from analyzer.errors import SETTING
from analyzer.identity import VocabKind, VocabularyId
from analyzer.settings import RunSettings
from analyzer.store import VocabularyRecord

from ..errors import RunError
from ..plan import Report, SourceTables, count_joined, joined_texts
from ..resolution import invalid
from ..resolved import ResolvedRun
from ..spread import Spread, ThreadSpread

KINDS = (VocabKind.PRODUCTION,)
MEASURED_ALONE = ("tokenizers",)
"""A run of these settings alone, with no sizes, measures vocabularies all the same."""


def check(settings: RunSettings, run: ResolvedRun, taken: set[str]) -> tuple[dict, dict]:
    """The tokenizers to measure, resolved (the catalog's, files, the hub's), each name not
    already a vocabulary's of the run."""
    specs = settings.tokenizers
    from analyzer.external import (
        ProductionTokenizer,
        TokenizerError,
        expand_all_available,
        resolve_tokenizer,
    )

    try:
        specs, _ = expand_all_available(specs)
    except TokenizerError as error:
        raise invalid("tokenizers", None, f"{SETTING} {error}") from None
    resolved: list[ProductionTokenizer] = []
    given: dict[str, str] = {}
    for spec in dict.fromkeys(specs):
        try:
            tokenizer = resolve_tokenizer(spec)
        except TokenizerError as error:
            raise invalid("tokenizers", spec, f"{SETTING} {error}") from None
        if tokenizer.name in taken:
            raise invalid("tokenizers", spec, f"{SETTING} {spec}: its name {tokenizer.name!r} "
                          "is already used in this run; rename the file")
        resolved.append(tokenizer)
        taken.add(tokenizer.name)
        given[tokenizer.name] = spec
    # The specs as given, by name: where a tokenizer is measured in another process (a Dask
    # worker), it is resolved there from its spec.
    return {"tokenizers": resolved, "tokenizer_specs": given}, {}


def records(run: ResolvedRun, texts: dict[str, list[str]], report: Report | None = None,
            source: SourceTables | None = None, spread: Spread | None = None
            ) -> list[VocabularyRecord]:
    """Each production tokenizer's record, the tokenizers measured side by side (`spread`:
    this process's threads by default, or a Dask cluster's workers); each pair's vocabulary
    overlap on the first's."""
    tokenizers = run.made["tokenizers"]
    if not tokenizers:
        return []
    task = Measure(run.made["tokenizer_specs"], run.settings.special_tokens,
                   run.measured_units,
                   {lang: [texts[lang][u] for u in run.measured_units] for lang in run.languages},
                   joined_texts(texts, run.languages, run.measured_units, run.joined_ids))
    spread = spread or ThreadSpread(run.settings.jobs or os.cpu_count() or 1)
    found = spread.map(task, tokenizers if spread.in_process
                       else [tokenizer.name for tokenizer in tokenizers],
                       [tokenizer.name for tokenizer in tokenizers], report)
    for i, (tokenizer, record) in enumerate(zip(tokenizers, found)):
        if tokenizer.has_tokens:
            overlaps = {other.name: tokenizer.overlap(other) for other in tokenizers[i + 1:]}
            record.overlaps = {name: pair for name, pair in overlaps.items() if pair is not None}
    return found


@dataclass(frozen=True)
class Measure:
    """One tokenizer's measurement as a task: given the tokenizer (in this process), or its
    name (in another, which resolves it from the spec it was given by, on that machine)."""

    specs: dict[str, str]
    special_tokens: bool
    measured_units: list[int]
    measured: dict[str, list[str]]
    joined: dict[str, str] | None

    def __call__(self, tokenizer, report: Report) -> VocabularyRecord:
        if isinstance(tokenizer, str):
            tokenizer = self._resolved(tokenizer)
        return measure_tokenizer(tokenizer, self.special_tokens, self.measured_units,
                                 self.measured, self.joined, report)

    def _resolved(self, name: str):
        from analyzer.external import TokenizerError, resolve_tokenizer

        try:
            return resolve_tokenizer(self.specs[name], downloads=False)
        except TokenizerError as error:
            raise RunError(f"{SETTING} {name} cannot be measured here ({socket.gethostname()}): "
                           f"{error}", setting="tokenizers") from None


def _refuse_no_tokens(name: str, counts: dict[str, list[int]], measured_units: list[int]
                      ) -> None:
    """RunError for a tokenizer that gives a text no token (a vocabulary without its
    characters and no unknown token, a normaliser that drops them): such a text has no
    premium, and a run that stored it could not be shown."""
    for lang, found in counts.items():
        if 0 in found:
            unit = measured_units[found.index(0)] + 1
            raise invalid("tokenizers", name, f"{SETTING} {name}: it gives {lang}'s unit {unit} "
                          "no token at all (its vocabulary lacks that text's characters, with "
                          "no unknown token, or its normaliser drops them); a text of no "
                          "tokens has no premium, so it cannot be measured")


def measure_tokenizer(tokenizer, special_tokens: bool, measured_units: list[int],
                      measured: dict[str, list[str]], joined: dict[str, str] | None,
                      report: Report | None) -> VocabularyRecord:
    """Count every measured unit of every language (and, with `count` joined, each language's
    `joined` text) with a production tokenizer, on the analyzer's engine where it equals the
    library (`ProductionTokenizer.measure`), else with the library's own encoder; stored like
    a vocabulary of the run at its real size, without merges; with the words its tokens split
    (from the same pass) and the scripts of its vocabulary (kept per tokenizer file)."""
    if report:
        report(tokenizer.name, "count", 0, 1)
    start = time.perf_counter()
    # All languages in one call: the engine spreads them over its threads, and meets each
    # distinct chunk once.
    languages = list(measured)
    flat = [text for lang in languages for text in measured[lang]]
    found, cut = tokenizer.measure(flat)
    # Special tokens the library adds to each text: the same for every text it counts.
    added = tokenizer.specials if special_tokens else 0
    counts, split, at = {}, {}, 0
    for lang in languages:
        end = at + len(measured[lang])
        counts[lang] = [n + added for n in found[at:end]]
        words = cut[at:end]
        # None for a language written without spaces, or where a unit's pieces did not spell it
        split[lang] = None if not separates_words(lang) or None in words else sum(words)
        at = end
    _refuse_no_tokens(tokenizer.name, counts, measured_units)
    counted = count_joined(joined, lambda texts: {
        tokenizer.size: [n + added for n in tokenizer.measure(texts, words=False)[0]]},
        [tokenizer.size])
    if report:
        report(tokenizer.name, "done", 1, 1)
    framing = tokenizer.entry.framing if tokenizer.entry else None
    identity = VocabularyId.production(tokenizer.name)
    return VocabularyRecord(scope=identity.scope, kind=identity.kind, size=tokenizer.size,
                            counts={tokenizer.size: counts}, joined=counted,
                            special_tokens=tokenizer.specials,
                            split_words={lang: n for lang, n in split.items() if n is not None},
                            scripts=tokenizer.scripts(),
                            seconds=round(time.perf_counter() - start, 3),
                            library=tokenizer.library, source=tokenizer.source,
                            engine=tokenizer.counted_by,
                            framing=framing.tokens if framing else None,
                            framing_basis=str(framing.basis) if framing else None)

