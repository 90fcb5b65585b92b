"""Production tokenizers, measured, not trained: counted by their own libraries on every
measured unit of every language, stored like a trained vocabulary's counts, without merges;
with what the field reports of them beside (`analyzer.external.vocabulary`): the words their
tokens split, the scripts of their vocabularies, and how much of each other's they share."""

from __future__ import annotations

import time

from analyzer.corpus.languages import separates_words
from analyzer.errors import SETTING
from analyzer.external.vocabulary import jaccard, script_composition, split_words
from analyzer.identity import VocabKind, VocabularyId
from analyzer.settings import RunSettings
from analyzer.store import VocabularyRecord

from ..plan import Report, SourceTables, count_joined, joined_texts
from ..resolution import ResolvedRun, invalid

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
    return {"tokenizers": resolved}, {}


def records(run: ResolvedRun, texts: dict[str, list[str]], report: Report | None = None,
            source: SourceTables | None = None) -> list[VocabularyRecord]:
    """Each production tokenizer's record; each pair's vocabulary overlap on the first's."""
    measured = {lang: [texts[lang][u] for u in run.measured_units] for lang in run.languages}
    joined = joined_texts(texts, run.languages, run.measured_units, run.joined_ids)
    found, vocabularies = [], {}
    for tokenizer in run.made["tokenizers"]:
        tokens = tokenizer.tokens() if tokenizer.tokens is not None else None
        found.append(measure_tokenizer(tokenizer, run, measured, joined, tokens, report))
        if tokens is not None:
            vocabularies[tokenizer.name] = set(tokens)
    for i, record in enumerate(found):
        if record.scope in vocabularies:
            record.overlaps = {other.scope: jaccard(vocabularies[record.scope],
                                                    vocabularies[other.scope])
                               for other in found[i + 1:] if other.scope in vocabularies}
    return found


def _split_words(tokenizer, units: list[str], lang: str) -> int | None:
    """The words of a language's units its tokens cut; None for a language written without
    spaces, or a tokenizer whose pieces do not spell the text (it normalises it)."""
    if tokenizer.pieces is None or not separates_words(lang):
        return None
    total = 0
    for text in units:
        found = split_words(text, [piece for _, piece in tokenizer.pieces(text)])
        if found is None:
            return None
        total += found
    return total


def _refuse_no_tokens(name: str, counts: dict[str, list[int]], run: ResolvedRun) -> None:
    """RunError for a tokenizer that gives a text no token (a vocabulary without its
    characters and no unknown token, a normaliser that drops them): such a text has no
    premium, and a run that stored it could not be shown."""
    for lang, found in counts.items():
        if 0 in found:
            unit = run.measured_units[found.index(0)] + 1
            raise invalid("tokenizers", name, f"{SETTING} {name}: it gives {lang}'s unit {unit} "
                          "no token at all (its vocabulary lacks that text's characters, with "
                          "no unknown token, or its normaliser drops them); a text of no "
                          "tokens has no premium, so it cannot be measured")


def measure_tokenizer(tokenizer, run: ResolvedRun, measured: dict[str, list[str]],
                      joined: dict[str, str] | None, tokens: list[bytes] | None,
                      report: Report | None) -> VocabularyRecord:
    """Count every measured unit of every language (and, with `count` joined, each language's
    `joined` text) with a production tokenizer's own encoder; stored like a vocabulary of the
    run at its real size, without merges; with the scripts of its vocabulary's `tokens`."""
    if report:
        report(tokenizer.name, "count", 0, 1)
    start = time.perf_counter()
    # Special tokens the library adds to each text: the same for every text it counts.
    added = tokenizer.specials if run.settings.special_tokens else 0
    counts = {lang: [n + added for n in tokenizer.count(units)] for lang, units in measured.items()}
    _refuse_no_tokens(tokenizer.name, counts, run)
    counted = count_joined(joined, lambda found: {
        tokenizer.size: [n + added for n in tokenizer.count(found)]}, [tokenizer.size])
    split = {lang: _split_words(tokenizer, units, lang) for lang, units in measured.items()}
    if report:
        report(tokenizer.name, "done", 1, 1)
    framing = tokenizer.entry.framing if tokenizer.entry else None
    identity = VocabularyId.production(tokenizer.name)
    return VocabularyRecord(scope=identity.scope, kind=identity.kind, size=tokenizer.size,
                            counts={tokenizer.size: counts}, joined=counted,
                            special_tokens=tokenizer.specials,
                            split_words={lang: n for lang, n in split.items() if n is not None},
                            scripts=script_composition(tokens) if tokens is not None else None,
                            seconds=round(time.perf_counter() - start, 3),
                            library=tokenizer.library, source=tokenizer.source,
                            framing=framing.tokens if framing else None,
                            framing_basis=str(framing.basis) if framing else None)

