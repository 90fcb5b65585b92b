"""What a job is: a vocabulary to build, what it trains on and what it counts. Plain data, so a
job runs the same in this process, in a process of its own or on a Dask worker; the builders
(`analyzer.runs.builders`) and the executors (`pool`, `cluster`) all stand on this module.

A job's training input is one interface, `TrainingInput`: what a builder asks of the text it
trains on (BPE's training over it, its distinct chunks with their counts, its size). Texts by
language are one implementation (`TrainingTexts`); a training source's counted sample is the
other (`SourceTables`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol, cast

from analyzer import bpe
from analyzer.bpe.counting import ChunkTable, merged, table_of
from analyzer.bpe.packing import PackedChunks
from analyzer.bpe.pretokenize import NONE, distinct_chunks, resolve
from analyzer.corpus.joined import join_units
from analyzer.identity import VocabKind, VocabularyId

Report = Callable[[str, str, int, int], None]
STEPS = {"train": "merges", "rounds": "rounds"}
"""What a training counts, by the phase it reports (`Report`): BPE's and WordPiece's merges,
Unigram's rounds of EM and pruning; every face's progress words (the terminal's bars, the
service's watch page)."""
"""report(label, phase, done, total); phase is "train" (done of total merges), "rounds"
(Unigram's rounds of EM and pruning), "count" or "done"."""


class TrainingInput(Protocol):
    """What a job trains on, as its builders use it."""

    @property
    def languages(self) -> list[str]:
        """The languages it holds text of, in training order."""
        ...

    @property
    def work(self) -> int:
        """How much there is to train on (to start the biggest jobs first)."""
        ...

    def train_bpe(self, vocab_size: int, **options) -> bpe.LanguageTraining:
        """`bpe.train_by_language` over this input (the options are its own)."""
        ...

    def chunk_table(self, pretokenizer: str) -> ChunkTable:
        """Every distinct chunk the pre-tokenizer cuts, with how often it occurs (training
        weights applied), packed (no Python object per chunk); with `none`, each text is one
        chunk."""
        ...

    def n_bytes(self) -> int:
        """The UTF-8 bytes trained on, weights applied."""
        ...


@dataclass
class TrainingTexts:
    """Texts by language, each language's texts counting `weights[lang]` times (default 1)."""

    by_language: dict[str, list[str]]
    weights: dict[str, int] = field(default_factory=dict)

    @property
    def languages(self) -> list[str]:
        return list(self.by_language)

    @property
    def work(self) -> int:
        return sum(len(t) for texts in self.by_language.values() for t in texts)

    def train_bpe(self, vocab_size: int, **options) -> bpe.LanguageTraining:
        return bpe.train_by_language(self.by_language, vocab_size, weights=self.weights or None,
                                     **options)

    def _weighted(self) -> tuple[list[str], list[int]]:
        texts, weights = [], []
        for lang, units in self.by_language.items():
            texts.extend(units)
            weights.extend([self.weights.get(lang, 1)] * len(units))
        return texts, weights

    def chunk_table(self, pretokenizer: str) -> ChunkTable:
        texts, weights = self._weighted()
        splitter = resolve(pretokenizer)
        return table_of(*distinct_chunks(texts, splitter, weights) if splitter else (texts, weights))

    def n_bytes(self) -> int:
        texts, weights = self._weighted()
        return sum(len(text.encode("utf-8", errors="surrogateescape")) * weight
                   for text, weight in zip(texts, weights))


def pretokenizer_name(pretokenizer) -> str:
    """How a job names what cuts its text: a pre-tokenizer's name, or (a production
    tokenizer's own splitter, extended) `base:` and the tokenizer's name."""
    if pretokenizer is None or isinstance(pretokenizer, str):
        return pretokenizer or NONE
    return f"base:{pretokenizer.name}"


@dataclass
class SourceTables:
    """A training source's sample, counted (`analyzer.runs.counting`): each language's table of
    distinct chunks under each pre-tokenizer, in a file of the chunk-count cache (a job reads
    its own, wherever it runs; they travel as paths)."""

    tables: dict[tuple[str, str], str]
    """`{(lang, pre-tokenizer name): path}` (`pretokenizer_name`)."""
    bytes_by_language: dict[str, int]
    order: list[str]
    min_count: int = 1
    """Only the chunks a language's table counts this many times or more are trained on
    (`min_chunk_count`)."""

    @property
    def languages(self) -> list[str]:
        return list(self.order)

    @property
    def work(self) -> int:
        return sum(self.bytes_by_language[lang] for lang in self.order)

    def only(self, languages: list[str]) -> SourceTables:
        """The same tables, of some languages."""
        return replace(self, order=list(languages))

    def _counts(self, pretokenizer) -> bpe.ChunkTables:
        """Each language's chunks and counts, read from its table when asked for (not kept:
        training lays them out one language at a time)."""
        from .chunk_cache import table_chunks  # pyarrow: loaded where a table is read

        key = pretokenizer_name(pretokenizer)

        def load(lang: str) -> bpe.ChunkCounts:
            return bpe.ChunkCounts(*table_chunks(Path(self.tables[(lang, key)]), self.min_count))

        return bpe.ChunkTables(self.order, load)

    def train_bpe(self, vocab_size: int, **options) -> bpe.LanguageTraining:
        pretokenizer = options.pop("pretokenizer", NONE)
        return bpe.train_by_language(self._counts(pretokenizer), vocab_size,
                                     pretokenizer=pretokenizer, **options)

    def chunk_table(self, pretokenizer: str) -> ChunkTable:
        # The languages' tables merged one at a time (each read, then let go).
        return merged((chunks.data, chunks.offsets, table.counts)
                      for table in self._counts(pretokenizer).values()
                      for chunks in [cast(PackedChunks, table.chunks)])

    def n_bytes(self) -> int:
        return self.work


class Identified:
    """What a job and its plan say of themselves from their identity: kind, scope, and the
    label progress shows."""

    identity: VocabularyId
    pretokenizer: str
    sizes: list[int]

    @property
    def kind(self) -> VocabKind:
        return self.identity.kind

    @property
    def scope(self) -> str:
        return self.identity.scope

    @property
    def label(self) -> str:
        return job_label(self.scope, self.pretokenizer, self.kind, self.sizes)


@dataclass
class VocabularyJob(Identified):
    identity: VocabularyId
    training: TrainingInput
    measure: dict[str, list[str]]
    """The measured texts of every language this vocabulary counts."""
    sizes: list[int]
    tie_break: str
    min_pair_count: int
    pretokenizer: str = NONE
    """The pre-tokenizer's name as given (built-in, re:PATTERN or split:PATTERN)."""
    global_merges: int = 0
    """Parity-aware: the first merges, chosen over all languages together."""
    dev: dict[str, list[str]] | None = None
    """Parity-aware: the texts whose token counts decide whose turn it is (default: the
    training texts)."""
    joined: dict[str, str] | None = None
    """With `count` joined: each counted language's measured units joined into one text,
    counted once at every size besides its units."""

    @property
    def work(self) -> int:
        return self.training.work


def job_label(scope: str, pretokenizer: str, kind: VocabKind | None = None,
              sizes: list[int] | None = None) -> str:
    """How progress names a job: its scope, its pre-tokenizer if it has one, and the size of a
    job that trains one size (Unigram and WordPiece: each size is its own training).

    >>> job_label("unigram", "words", VocabKind("unigram"), [4096])
    'unigram [words] size 4096 (its own training)'
    """
    label = scope if pretokenizer == NONE else f"{scope} [{pretokenizer}]"
    if kind is not None and not kind.has_merges and sizes:
        label += f" size {sizes[0]} (its own training)"
    return label


@dataclass
class JobPlan(Identified):
    """A job without its texts: which languages and units it trains on and counts. Texts
    travel once to where the jobs run (a Dask cluster), and each job takes its own from them."""

    identity: VocabularyId
    train_on: list[str]
    count: list[str]
    train_units: list[int]
    measured_units: list[int]
    sizes: list[int]
    tie_break: str
    min_pair_count: int
    pretokenizer: str = NONE
    weights: dict[str, int] = field(default_factory=dict)
    global_merges: int = 0
    judged: bool = False
    """Parity-aware: some texts' token counts decide whose turn each merge is."""
    dev_measured: bool = False
    """Parity-aware with a holdout, or trained on a source: the measured units decide whose
    turn it is."""
    source: SourceTables | None = None
    """Trained on a training source's sample, not on the corpus's units."""
    joined_ids: list[str | None] | None = None
    """With `count` joined: the measured units' ids, which group the join."""

    def trained_on(self, source: SourceTables) -> JobPlan:
        """The same job trained on a training source's sample; judged (parity-aware), the
        corpus's measured units then decide whose turn it is."""
        return replace(self, source=source, dev_measured=self.judged)

    def work(self, texts: dict[str, list[str]]) -> int:
        if self.source is not None:
            return self.source.only(self.train_on).work
        return sum(len(texts[lang][u]) for lang in self.train_on for u in self.train_units)

    def job(self, texts: dict[str, list[str]]) -> VocabularyJob:
        def units(languages: list[str], which: list[int]) -> dict[str, list[str]]:
            return {lang: [texts[lang][u] for u in which] for lang in languages}

        training: TrainingInput = self.source.only(self.train_on) if self.source is not None \
            else TrainingTexts(units(self.train_on, self.train_units), self.weights)
        return VocabularyJob(
            self.identity, training, units(self.count, self.measured_units), self.sizes,
            self.tie_break, self.min_pair_count, self.pretokenizer,
            global_merges=self.global_merges,
            dev=units(self.train_on, self.measured_units) if self.dev_measured else None,
            joined=joined_texts(texts, self.count, self.measured_units, self.joined_ids))


def joined_texts(texts: dict[str, list[str]], languages: list[str], measured: list[int],
                 joined_ids: list[str | None] | None) -> dict[str, str] | None:
    """With `count` joined (`joined_ids` given): each language's measured units joined into
    one text (`analyzer.corpus.joined`); None otherwise."""
    if joined_ids is None:
        return None
    return {lang: join_units([texts[lang][u] for u in measured], joined_ids)
            for lang in languages}


def progress_reporter(label: str, report: Report, largest: int) -> bpe.Progress:
    """The engine's progress callback for a job: a report about every hundredth of its merges
    (the engine calls after each block of merges) and at the end."""
    step = max(1, (largest - 256) // 100)
    reported = [-1]  # the last step reported

    def on_merge(done: int, total: int) -> None:
        if done // step != reported[0] or done == total:
            reported[0] = done // step
            report(label, "train", done, total)

    return on_merge


def count_joined(joined: dict[str, str] | None, count: Callable[[list[str]], dict[int, list[int]]],
                 sizes: list[int]) -> dict[int, dict[str, int]] | None:
    """With `count` joined: `{size: {lang: tokens of its joined text}}`, `count` giving
    `{size: [tokens of each text]}` for every one of `sizes`; None otherwise."""
    if joined is None:
        return None
    languages = list(joined)
    found = count([joined[lang] for lang in languages])
    return {size: dict(zip(languages, found[size])) for size in sizes}


def split_by_language(flat: list[int], measure: dict[str, list[str]]) -> dict[str, list[int]]:
    """Counts of the measured texts, all languages in a row, back into `{lang: counts}`."""
    by_language, offset = {}, 0
    for lang, texts in measure.items():
        by_language[lang] = flat[offset:offset + len(texts)]
        offset += len(texts)
    return by_language
