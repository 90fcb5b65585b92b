"""A run's settings checked against the database before anything starts, and made concrete
(`ResolvedRun`). Messages name each setting by its library name (`{setting}`), which each
face renders as it calls it (the command line: --vocab; the service: sizes)."""

from __future__ import annotations

import dataclasses
import random
import re
from types import MappingProxyType
from typing import Any

from analyzer.bpe import PretokenizerError
from analyzer.bpe.pretokenize import NONE, USER_AROUND_PREFIX, USER_PREFIX
from analyzer.bpe.pretokenize import resolve as resolve_pretokenizer
from analyzer.corpus import CorpusError, normalise_language
from analyzer.errors import SETTING, AnalyzerError, NotFound, did_you_mean, setting
from analyzer.identity import VocabKind, reserved_scopes
from analyzer.settings import (
    DEFAULT_PIVOT,
    MAX_LANGUAGES,
    CountConvention,
    ExecutorName,
    RunSettings,
    describe_bounds,
)
from analyzer.store import (
    AnalyzerDatabase,
    CorpusDetail,
    get_corpus,
    get_source,
    list_corpora,
    load_unit_ids,
)

from .counting import ORDER_BITS, LanguagePlan, SourcePlan, as_registered
from .errors import RunError
from .registry import BUILDERS, Hooks, hook, kinds_built
from .resolved import ResolvedRun
from .sample import budgets, parse_mix, threshold


def resolve(db: AnalyzerDatabase, settings: RunSettings) -> ResolvedRun:
    """The settings checked against the database and each other, made concrete: first what
    every run has, then each builder's own settings by its `check` (`registry`). The run is
    made whole at the end, what the builders made of their settings in it: nothing changes
    it afterwards. (Each builder's `check` sees the run without them, as it always has: a
    builder reads what every run has, not another's.)"""
    if not settings.sizes and not any(getattr(settings, name) for builder in BUILDERS
                                      for name in hook(builder, "MEASURED_ALONE",
                                                       Hooks.MEASURED_ALONE)):
        raise RunError(f"nothing to measure: give {setting('sizes')} (e.g. 512) and/or "
                       f"{setting('tokenizers')} (e.g. cl100k_base)", setting="sizes")
    sizes = _sizes(settings.sizes) if settings.sizes else []
    corpus = _corpus(db, settings.corpus)
    languages = _languages(corpus, settings.languages)
    pivot = _pivot(languages, settings.pivot)
    # Every bound of a single setting, and every choice (a tie-break, an executor, a count),
    # is its definition's (RunSettings checks them as it is made); what is checked here is
    # each setting against the corpus and the others.
    train, measured = split_units(corpus.units, settings.holdout, settings.seed)
    pretokenizers = _pretokenizers(settings.pretokenizers)
    weights = _weights(settings.weights, languages)
    _scheduler(settings)
    source = _source(db, settings, languages, pretokenizers)
    joined_ids = _joined(db, settings, corpus, measured)
    basis = ResolvedRun(corpus, languages, pivot, sizes, train, measured, settings,
                        pretokenizers, weights, source, joined_ids)
    unbuilt = set(VocabKind) - kinds_built()
    if unbuilt:
        raise RunError(f"no builder builds the kind {', '.join(sorted(unbuilt))}, registered by "
                       "a plug-in: register its builder too (analyzer.runs.registry.register)")
    taken = reserved_scopes(languages)
    clash = sorted(set(languages) & reserved_scopes([]))
    if clash:
        raise RunError(f"{SETTING}: {', '.join(clash)} is a language of the run and the name of a "
                       "kind's vocabulary; rename the language in the corpus",
                       setting="languages")
    made: dict[str, Any] = {}
    recorded: dict[str, Any] = {}
    for builder in BUILDERS:
        its_made, its_recorded = hook(builder, "check", Hooks.check)(settings, basis, taken)
        made.update(its_made)
        recorded.update(its_recorded)
    return dataclasses.replace(basis, made=MappingProxyType(made),
                               recorded=MappingProxyType(recorded))


def refusals(db: AnalyzerDatabase, values: dict[str, Any],
             refused: list[AnalyzerError] | tuple[AnalyzerError, ...] = ()) -> list[AnalyzerError]:
    """Every refusal of a run's settings at once, at most one per setting, for a form that
    shows each at its field: `refused` (what was already found wrong of `values`, e.g. every
    bound the definition checks), then what `resolve` refuses, one by one, each setting
    refused put back to its default to look for the next (or, when its default is what is
    refused, its definition's example: no sizes and no tokenizer is "nothing to measure").
    The search ends at a refusal of no one setting, or of one already refused.

    `values` holds only values the definition accepts (the fields `refused` names are left
    out here)."""
    found = list(refused)
    wrong = {error.setting for error in found if error.setting}
    examples: set[str] = set()
    fields = RunSettings.__pydantic_fields__  # type: ignore[attr-defined]
    while True:
        kept = {name: value for name, value in values.items() if name not in wrong}
        kept.update({name: fields[name].examples[0] for name in examples})
        try:
            resolve(db, RunSettings(**kept))
            return found
        except AnalyzerError as error:
            name = error.setting
            if name in wrong and name not in examples and name in fields and fields[name].examples:
                examples.add(name)  # refused again as its default: its example is a value
                continue
            if name in wrong:
                return found  # a refusal of what was put in its place: said already
            found.append(error)
            if name is None:
                return found
            wrong.add(name)


def _joined(db: AnalyzerDatabase, settings: RunSettings, corpus: CorpusDetail,
            measured: list[int]) -> list[str | None] | None:
    """With `count` joined, the measured units' ids (their splits group the join); None
    otherwise."""
    if settings.count == CountConvention.UNITS:
        return None
    ids = load_unit_ids(db, corpus)
    return [ids[unit] for unit in measured]


MAX_FILES = 1 << (63 - 2 * ORDER_BITS)
"""The most files of one language a run reads: a chunk's order key is (file, batch, chunk)."""

NONE_LIMIT = 256 << 20
"""The most text a run trains on from a source with pre-tokenizer `none`: each document is then
one chunk, so the engine holds the whole sample (with a pre-tokenizer it holds the distinct
chunks, whatever the size of the text)."""


def _source(db: AnalyzerDatabase, settings: RunSettings, languages: list[str],
            pretokenizers: list[str]) -> SourcePlan | None:
    """The sample of `train_on`: every run language in it, its files as registered, each
    language's budget by the mix."""
    if settings.train_on is None:
        for name, value in (("train_bytes", settings.train_bytes),
                            ("min_chunk_count", settings.min_chunk_count != 1),
                            ("mix", settings.mix != "natural"),
                            ("skip_invalid", settings.skip_invalid)):
            if value:
                raise RunError(f"{SETTING} is for training on a source: add "
                               f"{setting('train_on')} (analyzer sources lists them)", setting=name)
        return None
    if settings.weights:
        raise RunError(f"{SETTING} is the corpus's training mix; training on a source, its mix "
                       f"is {setting('mix')}", setting="weights")
    if settings.holdout:
        raise RunError(f"{SETTING} holds units of the corpus out of its training; training on a "
                       "source, the corpus is measured whole", setting="holdout")
    detail = _named(get_source, db, settings.train_on, "train_on")
    by_language: dict[str, list] = {}
    for item in detail.file_list:
        by_language.setdefault(item.lang, []).append(item)
    missing = [lang for lang in languages if lang not in by_language]
    if missing:
        raise RunError(f"{SETTING} {detail.name} has no text in {', '.join(missing)} (it has: "
                       f"{', '.join(detail.languages)}); choose the run's languages with "
                       f"{setting('languages')}", setting="train_on", value=detail.name)
    for lang in languages:
        if len(by_language[lang]) > MAX_FILES:
            raise RunError(f"{SETTING} {detail.name} has {len(by_language[lang]):,} files in "
                           f"{lang}; a run reads at most {MAX_FILES:,} per language (join "
                           "shards into larger files)", setting="train_on", value=detail.name)
        for item in by_language[lang]:
            as_registered(detail.name, item)
    mix = parse_mix(settings.mix)
    available = {lang: sum(item.bytes for item in by_language[lang]) for lang in languages}
    budget = budgets(mix, available, settings.train_bytes)
    if NONE in pretokenizers and sum(min(budget[lang], available[lang]) for lang in languages) \
            > NONE_LIMIT:
        raise RunError(f"{setting('pretokenizers')} none makes every document of the sample one "
                       f"chunk, so the engine would hold the whole sample: at most "
                       f"{NONE_LIMIT >> 20} MB of it; choose a pre-tokenizer (words, o200k, "
                       f"...) or {setting('train_bytes')} 256M or less", setting="pretokenizers",
                       value=NONE)
    plans = {lang: LanguagePlan(lang, tuple(by_language[lang]), budget[lang],
                                threshold(budget[lang], available[lang])) for lang in languages}
    return SourcePlan(detail, settings.seed, str(mix), settings.skip_invalid, plans)


def invalid(name: str, value, message: str) -> RunError:
    return RunError(message, setting=name, value=value)


def _weights(weights: dict[str, int], languages: list[str]) -> dict[str, int]:
    """The training mix with codes normalised, checked against the run's languages."""
    found: dict[str, int] = {}
    for code, weight in weights.items():
        try:
            lang = normalise_language(code)
        except CorpusError as error:
            raise invalid("weights", code, f"{SETTING} {code}={weight}: {error}") from None
        if lang not in languages:
            raise invalid("weights", code, f"{SETTING} {code}={weight}: {lang} is not a language "
                          f"of this run ({', '.join(languages)})")
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise invalid("weights", weight, f"{SETTING} {code}={weight}: a weight is a whole "
                          f"number ({describe_bounds('weights')})")
        if lang in found:
            raise invalid("weights", code, f"{SETTING} {code}: {lang} is weighted twice")
        found[lang] = weight
    return {lang: weight for lang, weight in found.items() if weight != 1}


def _scheduler(settings: RunSettings) -> None:
    """A scheduler is the dask executor's, and an address."""
    if settings.scheduler is not None:
        if settings.executor != ExecutorName.DASK:
            raise RunError(f"{SETTING} is for the dask executor: set {setting('executor')} to dask",
                           setting="scheduler")
        check_scheduler(settings.scheduler)


SCHEDULER_ADDRESS = re.compile(r"^(tcp|tls|ucx|inproc|ws|wss)://[^\s/]+$")
def check_scheduler(address: str) -> None:
    """RunError unless `address` looks like a scheduler address (tcp://HOST:PORT)."""
    if not SCHEDULER_ADDRESS.match(address) or (address.startswith(("tcp://", "tls://"))
                                      and not re.search(r":\d+$", address)):
        raise RunError(f"{SETTING} {address!r} is not a Dask scheduler address: write "
                       "tcp://HOST:PORT (e.g. tcp://127.0.0.1:8786)", setting="scheduler",
                       value=address)


def _pretokenizers(names: list[str]) -> list[str]:
    if not names:
        raise RunError(f"{SETTING} needs at least one pre-tokenizer (none: no splitting)",
                       setting="pretokenizers")
    for name in names:
        try:
            resolve_pretokenizer(name)
        except PretokenizerError as error:
            raise invalid("pretokenizers", name, f"{SETTING}: {error}") from None
    return list(dict.fromkeys(names))


def check_lossless(run: ResolvedRun, texts: dict[str, list[str]]) -> None:
    """RunError, before anything is stored, when a pre-tokenizer of the user's own (re:...)
    loses text of the run or runs away on it, naming the language, the unit and the
    character. The built-in ones are lossless on any text by construction (and tested on
    every language of the real corpora); they are checked again as texts are split."""
    for name in run.pretokenizers:
        if not name.startswith((USER_PREFIX, USER_AROUND_PREFIX)):  # a user's pattern
            continue
        pretokenizer = resolve_pretokenizer(name)
        assert pretokenizer is not None
        for lang in run.languages:
            for unit, text in enumerate(texts[lang]):
                try:
                    pretokenizer.split(text, unit)
                except PretokenizerError as error:
                    raise RunError(f"{SETTING} {name} {error.failure}: {lang} unit {unit + 1} "
                                   f"of corpus {run.corpus.name!r}, {error.detail}; nothing "
                                   "was stored", setting="pretokenizers", value=name,
                                   language=lang, unit=unit + 1) from None


def split_units(n_units: int, holdout: float, seed: int) -> tuple[list[int], list[int]]:
    """(training units, measured units). With a holdout, the same units in every language are
    held out, chosen by `seed`; without one, both are all units.

    >>> split_units(5, 0.4, seed=0)
    ([0, 1, 2], [3, 4])
    """
    if not 0 <= holdout < 1:
        raise invalid("holdout", holdout, f"{SETTING} must be at least 0 and below 1, not {holdout}")
    everything = list(range(n_units))
    if holdout == 0:
        return everything, everything
    n_held = round(holdout * n_units)
    if n_held < 1 or n_held >= n_units:
        raise invalid("holdout", holdout, f"{SETTING} {holdout} of {n_units} units holds out "
                      f"{n_held}; at least one unit must be held out and one left to train on")
    held = sorted(random.Random(seed).sample(everything, n_held))
    held_set = set(held)
    return [u for u in everything if u not in held_set], held


def _sizes(sizes: list[int]) -> list[int]:
    return sorted(set(sizes))


def pin_of(resolved: ResolvedRun) -> str:
    """What a queued run is pinned to (`check_pinned_corpus`): its corpus's content digest and,
    training on a source, the source's fingerprint after it (one space between)."""
    source = resolved.source
    return resolved.corpus.content_hash + (f" {source.source.fingerprint}" if source else "")


def check_pinned_corpus(db: AnalyzerDatabase, settings: RunSettings, pinned: str) -> None:
    """RunError when the run's corpus no longer holds the content it was asked on, or its
    training source was registered again since (`pinned`: `pin_of` the run when it was asked
    for; a corpus digest alone from an older analyzer): a run queued on a corpus or a source
    replaced since is refused, never run on the new content."""
    content_hash, _, fingerprint = pinned.partition(" ")
    corpus = _corpus(db, settings.corpus)
    if corpus.content_hash != content_hash:
        raise RunError(f"corpus {corpus.name!r} changed since the run was queued (it was "
                       "replaced: its content is not what the run was asked on), so the run "
                       "was not started; ask for it again to run it on the new content",
                       setting="corpus")
    if fingerprint and settings.train_on is not None:
        source = _named(get_source, db, settings.train_on, "train_on")
        if source.fingerprint != fingerprint:
            raise RunError(f"training source {source.name!r} changed since the run was queued "
                           "(it was registered again: its files are not what the run was asked "
                           "on), so the run was not started; ask for it again to train on the "
                           "new files", setting="train_on")


def _named(get, db: AnalyzerDatabase, name: str, field: str):
    """`get(db, name)`; its NotFound said of the setting that named it (`field`), so that a
    face shows it there (the run form: at that field)."""
    try:
        return get(db, name)
    except NotFound as error:
        raise NotFound(error.message, setting=field, value=name) from None


def _corpus(db: AnalyzerDatabase, name: str | None) -> CorpusDetail:
    if name is not None:
        return _named(get_corpus, db, name, "corpus")  # NotFound, listing the corpora there are
    corpora = list_corpora(db)
    if not corpora:
        raise RunError("the database has no corpora yet; run analyzer ingest first",
                       setting="corpus")
    if len(corpora) > 1:
        names = ", ".join(c.name for c in corpora)
        raise RunError(f"the database has several corpora ({names}); choose one with {SETTING}",
                       setting="corpus")
    return get_corpus(db, corpora[0].name)


def _languages(corpus: CorpusDetail, wanted: list[str] | None) -> list[str]:
    available = corpus.languages
    if wanted is None:
        if len(available) > MAX_LANGUAGES:  # ingested by an analyzer that had no limit
            raise RunError(f"corpus {corpus.name!r} has {len(available):,} languages, more than "
                           f"the {MAX_LANGUAGES:,} a run may have; choose some with {SETTING}",
                           setting="languages")
        return available
    if not wanted:
        raise RunError(f"no languages: {SETTING} needs at least one language code",
                       setting="languages")
    chosen = []
    for code in wanted:
        try:
            language = normalise_language(code)
        except CorpusError as error:
            raise invalid("languages", code, f"{SETTING}: {error}"
                          f"{did_you_mean(code, available) if '?' not in str(error) else ''}; "
                          f"corpus {corpus.name!r} has: {', '.join(available)}") from None
        if language not in available:
            raise invalid("languages", code, f"{SETTING}: {language} is not in corpus "
                          f"{corpus.name!r} (it has: {', '.join(available)})")
        if language not in chosen:
            chosen.append(language)
    return chosen


def _pivot(languages: list[str], pivot: str | None) -> str:
    if pivot is None:
        return DEFAULT_PIVOT if DEFAULT_PIVOT in languages else languages[0]
    language = normalised(pivot, "pivot")
    if language not in languages:
        raise invalid("pivot", pivot, f"{SETTING} {language} is not among the run's languages "
                      f"({', '.join(languages)})")
    return language


def normalised(code: str, name: str) -> str:
    try:
        return normalise_language(code)
    except CorpusError as error:
        raise invalid(name, code, f"{SETTING}: {error}") from None
