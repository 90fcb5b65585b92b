"""What a run is asked to do, checked against the database before anything starts."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from analyzer.bpe import MAX_VOCAB_SIZE, PretokenizerError
from analyzer.bpe.contract import MAX_WEIGHT
from analyzer.bpe.pretokenize import NONE, USER_PREFIX
from analyzer.bpe.pretokenize import resolve as resolve_pretokenizer
from analyzer.bpe.reference import FIRST_NEW_ID, TIE_BREAKS
from analyzer.corpus import CorpusError, normalise_language
from analyzer.store import AnalyzerDatabase, CorpusDetail, StoreError, VocabKind, get_corpus, list_corpora

DEFAULT_PIVOT = "eng_Latn"
MAX_STORED_INT = 2**63 - 1
"""The largest integer SQLite stores: seeds and counts beyond it could never be read back."""


class RunError(ValueError):
    """Settings no run can honour; the message says which value and what would do."""


@dataclass
class RunSettings:
    sizes: list[int]
    corpus: str | None = None
    languages: list[str] | None = None
    pivot: str | None = None
    per_language: bool = True
    cross: bool = False
    holdout: float = 0.0
    seed: int = 0
    tie_break: str = "lexicographic"
    min_pair_count: int = 2
    jobs: int | None = None
    tokenizers: list[str] = field(default_factory=list)
    """Production tokenizers to measure: catalog names, `all-available`, NAME=FILE, hf:ORG/NAME
    or files (see analyzer.external)."""
    pretokenizers: list[str] = field(default_factory=lambda: [NONE])
    """Every trained vocabulary is trained once per pre-tokenizer: built-in names or re:PATTERN."""
    parity: bool = False
    """Also train a parity-aware vocabulary (each merge serves the worst-compressed language)."""
    global_merges: int = 0
    """The parity-aware vocabulary's first merges, chosen over all languages (the hybrid)."""
    weights: dict[str, int] = field(default_factory=dict)
    """The training mix of the shared and parity-aware vocabularies: `{lang: n}`, each unit of
    that language counting n times (default 1)."""
    executor: str = "local"
    """Where the trainings run: "local" (a process pool) or "dask" (a Dask cluster)."""
    scheduler: str | None = None
    """With the dask executor: the scheduler's address (tcp://HOST:PORT); None starts a
    LocalCluster on this machine."""


@dataclass(frozen=True)
class ResolvedRun:
    """Settings made concrete: the corpus, languages, pivot, sizes and the unit split."""

    corpus: CorpusDetail
    languages: list[str]
    pivot: str
    sizes: list[int]
    train_units: list[int]
    measured_units: list[int]
    settings: RunSettings
    tokenizers: list = field(default_factory=list)
    """The resolved `analyzer.external.ProductionTokenizer`s."""
    pretokenizers: list[str] = field(default_factory=lambda: [NONE])
    """The pre-tokenizers' names, checked, without repeats, in the order given."""
    weights: dict[str, int] = field(default_factory=dict)
    """The training mix, with language codes normalised; only weights other than 1."""


def resolve(db: AnalyzerDatabase, settings: RunSettings) -> ResolvedRun:
    if not settings.sizes and not settings.tokenizers:
        raise RunError("nothing to measure: pass --vocab (e.g. --vocab 512) and/or --tokenizer "
                       "(e.g. --tokenizer cl100k_base)")
    sizes = _sizes(settings.sizes) if settings.sizes else []
    corpus = _corpus(db, settings.corpus)
    languages = _languages(corpus, settings.languages)
    pivot = _pivot(languages, settings.pivot)
    if settings.tie_break not in TIE_BREAKS:
        raise RunError(f"--tie-break must be one of {', '.join(TIE_BREAKS)}, "
                       f"not {settings.tie_break!r}")
    if not 1 <= settings.min_pair_count <= MAX_STORED_INT:
        raise RunError(f"--min-pair-count must be 1 or more (and at most {MAX_STORED_INT:,}), "
                       f"not {settings.min_pair_count}")
    if settings.jobs is not None and settings.jobs < 1:
        raise RunError(f"--jobs must be 1 or more, not {settings.jobs}")
    if not 0 <= settings.seed <= MAX_STORED_INT:
        raise RunError(f"--seed must be from 0 to {MAX_STORED_INT:,}, not {settings.seed}")
    train, measured = split_units(corpus.units, settings.holdout, settings.seed)
    pretokenizers = _pretokenizers(settings.pretokenizers)
    weights = _weights(settings.weights, languages)
    _parity(settings, languages, sizes)
    _executor(settings)
    tokenizers = _tokenizers(settings.tokenizers, languages)
    return ResolvedRun(corpus, languages, pivot, sizes, train, measured, settings, tokenizers,
                       pretokenizers, weights)


def _weights(weights: dict[str, int], languages: list[str]) -> dict[str, int]:
    """The training mix with codes normalised, checked against the run's languages."""
    found: dict[str, int] = {}
    for code, weight in weights.items():
        try:
            lang = normalise_language(code)
        except CorpusError as error:
            raise RunError(f"--weight {code}={weight}: {error}") from None
        if lang not in languages:
            raise RunError(f"--weight {code}={weight}: {lang} is not a language of this run "
                           f"({', '.join(languages)})")
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= MAX_WEIGHT:
            raise RunError(f"--weight {code}={weight}: a weight is a whole number from 1 to "
                           f"{MAX_WEIGHT:,}")
        if lang in found:
            raise RunError(f"--weight {code}: {lang} is weighted twice")
        found[lang] = weight
    return {lang: weight for lang, weight in found.items() if weight != 1}


def _parity(settings: RunSettings, languages: list[str], sizes: list[int]) -> None:
    if not 0 <= settings.global_merges <= MAX_STORED_INT:
        raise RunError(f"--global-merges must be 0 or more, not {settings.global_merges}")
    if settings.global_merges and not settings.parity:
        raise RunError("--global-merges is for the parity-aware vocabulary: add --parity")
    if not settings.parity:
        return
    if not sizes:
        raise RunError("--parity trains a vocabulary: pass --vocab too (e.g. --vocab 4096)")
    if len(languages) < 2:
        raise RunError("--parity needs two languages or more: with one, it is the shared "
                       "vocabulary")


EXECUTORS = ("local", "dask")


def _executor(settings: RunSettings) -> None:
    if settings.executor not in EXECUTORS:
        raise RunError(f"--executor must be one of {', '.join(EXECUTORS)}, not {settings.executor!r}")
    if settings.scheduler is not None:
        if settings.executor != "dask":
            raise RunError("--scheduler is for the dask executor: add --executor dask")
        from .cluster import check_scheduler

        check_scheduler(settings.scheduler)


def _pretokenizers(names: list[str]) -> list[str]:
    if not names:
        raise RunError("--pretokenize needs at least one pre-tokenizer (none: no splitting)")
    for name in names:
        try:
            resolve_pretokenizer(name)
        except PretokenizerError as error:
            raise RunError(f"--pretokenize: {error}") from None
    return list(dict.fromkeys(names))


def check_lossless(run: ResolvedRun, texts: dict[str, list[str]]) -> None:
    """RunError, before anything is stored, when a pre-tokenizer of the user's own (re:...)
    loses text of the run, naming the language, the unit and the character. The built-in ones
    are lossless on any text by construction (and tested on every language of the real
    corpora); they are checked again as texts are split."""
    for name in run.pretokenizers:
        if not name.startswith(USER_PREFIX):
            continue
        pretokenizer = resolve_pretokenizer(name)
        assert pretokenizer is not None
        for lang in run.languages:
            for unit, text in enumerate(texts[lang]):
                try:
                    pretokenizer.split(text, unit)
                except PretokenizerError as error:
                    raise RunError(f"--pretokenize {name} {error.failure}: {lang} unit {unit + 1} "
                                   f"of corpus {run.corpus.name!r}, {error.detail}; nothing "
                                   "was stored") from None


def _tokenizers(specs: list[str], languages: list[str]) -> list:
    from analyzer.external import (
        ProductionTokenizer,
        TokenizerError,
        expand_all_available,
        resolve_tokenizer,
    )

    try:
        specs, _ = expand_all_available(specs)
    except TokenizerError as error:
        raise RunError(f"--tokenizer {error}") from None
    resolved: list[ProductionTokenizer] = []
    for spec in dict.fromkeys(specs):
        try:
            tokenizer = resolve_tokenizer(spec)
        except TokenizerError as error:
            raise RunError(f"--tokenizer {error}") from None
        taken = {t.name for t in resolved} | {VocabKind.SHARED, VocabKind.PARITY, *languages}
        if tokenizer.name in taken:
            raise RunError(f"--tokenizer {spec}: its name {tokenizer.name!r} is already used in "
                           "this run; rename the file")
        resolved.append(tokenizer)
    return resolved


def split_units(n_units: int, holdout: float, seed: int) -> tuple[list[int], list[int]]:
    """(training units, measured units). With a holdout, the same units in every language are
    held out, chosen by `seed`; without one, both are all units.

    >>> split_units(5, 0.4, seed=0)
    ([0, 1, 2], [3, 4])
    """
    if not 0 <= holdout < 1:
        raise RunError(f"--holdout must be at least 0 and below 1, not {holdout}")
    everything = list(range(n_units))
    if holdout == 0:
        return everything, everything
    n_held = round(holdout * n_units)
    if n_held < 1 or n_held >= n_units:
        raise RunError(f"--holdout {holdout} of {n_units} units holds out {n_held}; "
                       "at least one unit must be held out and one left to train on")
    held = sorted(random.Random(seed).sample(everything, n_held))
    held_set = set(held)
    return [u for u in everything if u not in held_set], held


def _sizes(sizes: list[int]) -> list[int]:
    if not sizes:
        raise RunError("no vocabulary size: pass --vocab, e.g. --vocab 512 or --vocab 256,1024")
    for size in sizes:
        if size < FIRST_NEW_ID:
            raise RunError(f"--vocab {size} is below {FIRST_NEW_ID}, the byte alphabet")
        if size > MAX_VOCAB_SIZE:
            raise RunError(f"--vocab {size} is above {MAX_VOCAB_SIZE:,}, the largest vocabulary "
                           "the engine trains")
    return sorted(set(sizes))


def _corpus(db: AnalyzerDatabase, name: str | None) -> CorpusDetail:
    if name is not None:
        try:
            return get_corpus(db, name)
        except StoreError as error:
            raise RunError(str(error)) from None
    corpora = list_corpora(db)
    if not corpora:
        raise RunError("the database has no corpora yet; run analyzer ingest first")
    if len(corpora) > 1:
        names = ", ".join(c.name for c in corpora)
        raise RunError(f"the database has several corpora ({names}); choose one with --corpus")
    return get_corpus(db, corpora[0].name)


def _languages(corpus: CorpusDetail, wanted: list[str] | None) -> list[str]:
    available = corpus.languages
    if wanted is None:
        return available
    if not wanted:
        raise RunError("no languages: --langs needs at least one language code")
    chosen = []
    for code in wanted:
        language = _normalised(code, "--langs")
        if language not in available:
            raise RunError(f"--langs: {language} is not in corpus {corpus.name!r} "
                           f"(it has: {', '.join(available)})")
        if language not in chosen:
            chosen.append(language)
    return chosen


def _pivot(languages: list[str], pivot: str | None) -> str:
    if pivot is None:
        return DEFAULT_PIVOT if DEFAULT_PIVOT in languages else languages[0]
    language = _normalised(pivot, "--pivot")
    if language not in languages:
        raise RunError(f"--pivot {language} is not among the run's languages "
                       f"({', '.join(languages)})")
    return language


def _normalised(code: str, option: str) -> str:
    try:
        return normalise_language(code)
    except CorpusError as error:
        raise RunError(f"{option}: {error}") from None
