"""What metrics read from the database: a run's counts and unit sizes (`RunData`), and what the
fairness metrics add (`FairnessData`): per-merge replacements, parity choices, token histograms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from analyzer.corpus.joined import added_spaces
from analyzer.errors import NotFound, did_you_mean
from analyzer.headroom import address_room
from analyzer.identity import VocabKind
from analyzer.store import (
    AnalyzerDatabase,
    ReplacementTexts,
    RunRead,
    TokenHistogram,
    VocabularyRead,
    get_corpus_by_id,
    get_run,
    load_chosen,
    load_chunk_counts,
    load_counts,
    load_histograms,
    load_joined_counts,
    load_merges,
    load_replacements,
    load_split_words,
    load_unit_ids,
    load_vocabulary_overlaps,
    load_vocabulary_scripts,
    unit_stats,
    vocabularies,
)

from .stats import bootstrap_weights


@dataclass
class FairnessData:
    """What the fairness and allocation metrics need beyond the counts."""

    trained: dict[tuple[str, str | None], dict[str, list[int]]]
    """`{(vocab, pretokenizer): {lang: [occurrences each merge replaced in training]}}`."""
    measured: dict[tuple[str, str | None], dict[str, list[int]]]
    """The same on the measured units (each language's token curve)."""
    chosen: dict[tuple[str, str | None], list[str | None]]
    """Parity-aware vocabularies: the language each merge was chosen for."""
    histograms: dict[tuple[str, str | None, int], dict[str, TokenHistogram]]
    """`{(vocab, pretokenizer, size): {lang: {token id: occurrences in the measured units}}}`."""
    train_bytes: dict[str, int]
    """Bytes of each language's training units (unweighted)."""
    superwords: dict[tuple[str, str | None], set[int]] = field(default_factory=dict)
    """SuperBPE vocabularies: the ids of their superword tokens (a space inside, between
    other bytes: a token that spans words)."""


_BLOCK = 4096

BLAS_ROOM = 128 << 20
"""The address space below which the bootstrap's product is taken without BLAS: OpenBLAS maps
a 32 MB buffer at its first product and, where `ulimit -v` leaves no room for it, retries for
ever, deaf to SIGTERM (`show` hung; a run hung once its results were stored)."""
"""Rows of counts multiplied by the bootstrap's draws at once (`RunData.bootstrap_totals`):
4,096 rows of 1,000 units, 33 MB of float64."""


@dataclass
class RunData:
    """Everything metrics need from the database, as arrays aligned with the measured units."""

    run: RunRead
    vocabularies: list[VocabularyRead]
    counts: dict[tuple[str, str | None, int], dict[str, np.ndarray]]
    """`{(vocab, pretokenizer, size): {lang: tokens per measured unit}}` (pretokenizer None for
    production tokenizers)."""
    unit_bytes: dict[str, np.ndarray]
    unit_chars: dict[str, np.ndarray]
    unit_words: dict[str, np.ndarray]
    chunks: dict[str, dict[str, np.ndarray]]
    """`{pretokenizer: {lang: chunks per measured unit}}` for the run's pre-tokenizers."""
    joined: dict[tuple[str, str | None, int], dict[str, int]] = field(default_factory=dict)
    """A run that counted joined texts (`count` joined): `{(vocab, pretokenizer, size): {lang:
    tokens of its measured units joined into one text}}`; empty otherwise."""
    joined_spaces: int = 0
    """The spaces the join adds to each language's measured units (`count` joined)."""
    split_words: dict[str, dict[str, int]] = field(default_factory=dict)
    """Production tokenizers: `{tokenizer: {lang: words of the measured units its tokens
    cut}}` (languages written with spaces)."""
    vocabulary_scripts: dict[str, dict[str, int]] = field(default_factory=dict)
    """Production tokenizers: `{tokenizer: {script: tokens of its vocabulary}}`."""
    vocabulary_overlaps: list[tuple[str, str, int, int]] = field(default_factory=list)
    """Each pair of production tokenizers: (one, the other, tokens both have, either has)."""
    fairness: FairnessData | None = None
    """Loaded unless `load_run_data(..., fairness=False)` (a table that needs only counts)."""
    run_pivot: str = ""
    """The run's own pivot, as it was run; `run.pivot` is the language every metric measures
    against: the same, unless the data was loaded against another `reference`."""
    _bootstrap: dict[int, dict[tuple[str, str | None, int], np.ndarray]] = field(
        default_factory=dict, repr=False, compare=False)
    _draws: dict[int, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    @property
    def joined_counts(self) -> bool:
        """Whether the run counted each language's units joined into one text: its totals are
        then those texts', and no interval is drawn (one text is not a sample of units)."""
        return self.run.count == "joined"

    def totals(self, key: tuple[str, str | None, int], langs: list[str]) -> np.ndarray:
        """Each language's tokens under one configuration: its joined text's (`count`
        joined), else the sum of its units'."""
        if self.joined_counts:
            return np.array([self.joined[key][lang] for lang in langs], dtype=np.int64)
        return np.array([int(self.counts[key][lang].sum()) for lang in langs], dtype=np.int64)

    def on_pivot(self, key: tuple[str, str | None, int]) -> list[str]:
        """The languages counted under one configuration, in run order, when the pivot is
        among them (its premiums can be taken); else none."""
        by_lang = self.counts[key]
        if self.run.pivot not in by_lang:
            return []
        return [lang for lang in self.run.languages if lang in by_lang]

    def bootstrap_totals(self, resamples: int) -> dict[tuple[str, str | None, int], np.ndarray]:
        """Each configuration counted on the pivot: each of its languages' total tokens in each
        of `resamples` seeded resamples of the measured units (languages x resamples, the
        languages as `on_pivot` lists them), computed once per `resamples` for every metric
        that draws intervals (`language_metrics`, `summaries`).

        Every configuration's rows go through one matrix product (in blocks of rows, to bound
        memory) rather than one product each: a run of 200 per-language vocabularies made 400
        products of two rows, and each woke BLAS's threads (25 ms apiece on a busy machine,
        1 ms alone). The counts are whole numbers, so the float64 product is exact, whatever
        its order of summation: the totals are the same integers a product per configuration
        gives.

            data.bootstrap_totals(1000)[("shared", "none", 4096)].shape  # (204, 1000)
        """
        if resamples not in self._bootstrap:
            draws = self.bootstrap_draws(resamples)
            keys = [key for key in self.counts if self.on_pivot(key)]
            rows = [self.counts[key][lang] for key in keys for lang in self.on_pivot(key)]
            boot = np.empty((len(rows), resamples))
            kind = product_type(address_room())
            draws = draws.astype(kind)
            for start in range(0, len(rows), _BLOCK):
                block: np.ndarray = np.vstack(rows[start:start + _BLOCK]).astype(kind)
                boot[start:start + len(block)] = block @ draws
            found, start = {}, 0
            for key in keys:
                n = len(self.on_pivot(key))
                found[key] = boot[start:start + n]
                start += n
            self._bootstrap[resamples] = found
        return self._bootstrap[resamples]

    def bootstrap_draws(self, resamples: int) -> np.ndarray:
        """How often each measured unit is drawn in each of `resamples` seeded resamples (units
        x resamples, float64), drawn once per `resamples`: every interval of the run (the ratio
        of totals', the mean of unit ratios') is taken over the same resamples."""
        if resamples not in self._draws:
            self._draws[resamples] = bootstrap_weights(
                len(self.run.measured_units), resamples, self.run.seed).T.astype(np.float64)
        return self._draws[resamples]

    def bootstrap_means(self, rows: np.ndarray, resamples: int) -> np.ndarray:
        """The mean of each row's defined values (rows x measured units; NaN: undefined, as a
        unit ratio over a pivot of no tokens) in each of the run's `resamples` resamples (rows
        x resamples; NaN where a resample drew no defined unit of the row): a resample's mean
        is its drawn values' sum over how many defined values it drew, two products with the
        resamples' draws, in blocks of rows as `bootstrap_totals` takes them.

        The values are not whole numbers, so where there is no room for BLAS (`product_type`)
        the products go through numpy's own loops (`einsum`), which call no BLAS."""
        draws = self.bootstrap_draws(resamples)
        defined = ~np.isnan(rows)
        values = np.where(defined, rows, 0.0)
        blas = product_type(address_room()) is np.float64

        def product(block: np.ndarray) -> np.ndarray:
            return block @ draws if blas else np.einsum("ij,jk->ik", block, draws,
                                                        optimize=False)

        found = np.empty((len(rows), resamples))
        for start in range(0, len(rows), _BLOCK):
            part = slice(start, start + _BLOCK)
            # a row defined at every unit drew as many units as there are in every resample;
            # only a row with gaps needs its own count of them
            drawn = np.full((len(values[part]), resamples), float(len(draws)))
            gaps = ~defined[part].all(axis=1)
            if gaps.any():
                drawn[gaps] = product(defined[part][gaps].astype(np.float64))
            with np.errstate(divide="ignore", invalid="ignore"):
                found[part] = product(values[part]) / drawn
        return found

    def kind(self, scope: str, pretokenizer: str | None) -> VocabKind:
        return next(v.kind for v in self.vocabularies
                    if v.scope == scope and v.pretokenizer == pretokenizer)


def product_type(room: int | None) -> type:
    """The type the bootstrap's product is taken in, given the address space left (None: no
    limit): float64, which numpy hands to BLAS, where there is room (`BLAS_ROOM`); else int64,
    numpy's own loops, which call no BLAS: slower, and as exact (the counts are integers).

    >>> product_type(None).__name__, product_type(0).__name__
    ('float64', 'int64')
    """
    return np.float64 if room is None or room > BLAS_ROOM else np.int64


def with_reference(run: RunRead, reference: str | None) -> RunRead:
    """The run as seen against another reference language: its `pivot` is then `reference`, so
    every premium, cost, interval and sentence computed from it is that language's (the
    verdicts are not: the Gini of premiums is the same against any language). NotFound naming
    the run's languages when it has none such. A vocabulary trained on one language counted
    that language and the run's own pivot only: against another reference it has no premium.

    >>> from types import SimpleNamespace
    >>> class Run(SimpleNamespace):
    ...     def model_copy(self, update): return Run(**{**vars(self), **update})
    >>> with_reference(Run(id=1, pivot="eng_Latn", languages=["eng_Latn", "hin_Deva"]),
    ...                "hin_Deva").pivot
    'hin_Deva'
    """
    if reference is None or reference == run.pivot:
        return run
    if reference not in run.languages:
        raise NotFound(f"run {run.id} has no language {reference[:80]!r} to measure against (its "
                       f"languages: {', '.join(run.languages)}){did_you_mean(reference, run.languages)}")
    return run.model_copy(update={"pivot": reference})


def load_run_data(db: AnalyzerDatabase, run_id: int, fairness: bool = True,
                  reference: str | None = None) -> RunData:
    """A run's data (`RunData`), against its pivot or another `reference` language of the run
    (`with_reference`)."""
    stored = get_run(db, run_id)
    run = with_reference(stored, reference)
    counts: dict[tuple[str, str | None, int], dict[str, np.ndarray]] = {}
    for vocab, pretokenizer, size, lang, units in load_counts(db, run_id):
        counts.setdefault((vocab, pretokenizer, size), {})[lang] = np.asarray(units, dtype=np.int64)
    stats = unit_stats(db, run.corpus_id, run.languages, run.measured_units)
    chunks = {pretokenizer: {lang: np.asarray(units, dtype=np.int64) for lang, units in by_lang.items()}
              for pretokenizer, by_lang in load_chunk_counts(db, run_id).items()}
    data = RunData(run, vocabularies(db, run_id), counts, stats["bytes"], stats["chars"],
                   stats["words"], chunks)
    data.run_pivot = stored.pivot
    data.split_words = load_split_words(db, run_id)
    data.vocabulary_scripts = load_vocabulary_scripts(db, run_id)
    data.vocabulary_overlaps = load_vocabulary_overlaps(db, run_id)
    if run.count == "joined":
        data.joined = load_joined_counts(db, run_id)
        ids = load_unit_ids(db, get_corpus_by_id(db, run.corpus_id))
        data.joined_spaces = added_spaces([ids[unit] for unit in run.measured_units])
    if fairness:
        data.fairness = _load_fairness(db, run, stats["bytes"])
    return data


def _load_fairness(db: AnalyzerDatabase, run: RunRead,
                   measured_bytes: dict[str, np.ndarray]) -> FairnessData:
    """The fairness data of a run; `measured_bytes`, its measured units' bytes: the training
    units' too, unless units were held out."""
    train_bytes = measured_bytes
    if run.holdout:
        measured_units = set(run.measured_units)
        n_units = get_corpus_by_id(db, run.corpus_id).units
        train_units = [u for u in range(n_units) if u not in measured_units]
        train_bytes = unit_stats(db, run.corpus_id, run.languages, train_units)["bytes"]
    return FairnessData(
        trained=load_replacements(db, run.id, ReplacementTexts.TRAINED),
        measured=load_replacements(db, run.id, ReplacementTexts.MEASURED),
        chosen=load_chosen(db, run.id), histograms=load_histograms(db, run.id),
        train_bytes={lang: int(values.sum()) for lang, values in train_bytes.items()},
        superwords={(v.scope, v.pretokenizer): {m.new_id for m in load_merges(db, run.id, v.scope,
                                                                              v.pretokenizer)
                                                if is_superword(m.token)}
                    for v in vocabularies(db, run.id) if v.kind.two_stages})


def is_superword(token: bytes) -> bool:
    """Whether a token spans words: a space with other bytes on both sides of it.

    >>> is_superword(b" of the"), is_superword(b" the"), is_superword(b"the  ")
    (True, False, False)
    """
    return b" " in token.strip(b" ")


