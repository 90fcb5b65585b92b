"""Unigram and WordPiece vocabularies as jobs of a run.

Neither algorithm is prefix-consistent, so a job trains one size (the pool and the Dask
executor spread the sizes like any other jobs) and `combine` joins a vocabulary's sizes into one
record before the run stores it. A job cuts its training texts with the run's
pre-tokenizer, gives the trainer every chunk with how often it occurs (training weights
applied), and counts every measured unit with the model it trained: the library encodes each
distinct chunk once. The record keeps the model (its tokenizer.json), each size's token counts
and histograms, and whether every measured text round-trips.
"""

from __future__ import annotations

import time
from array import array
from collections import Counter
from dataclasses import replace

import numpy as np

from analyzer.bpe.pretokenize import NONE, Chunked, chunk_texts, resolve
from analyzer.errors import SETTING, setting
from analyzer.external.library_trained import LibraryModel, min_size, train_model
from analyzer.identity import Algorithm, VocabKind, VocabularyId
from analyzer.settings import ALGORITHMS, MAX_LIBRARY_SIZE, RunSettings
from analyzer.store import VocabularyRecord

from .. import costs
from ..costs import Stage
from ..errors import RunError
from ..plan import JobPlan, Report, VocabularyJob, count_joined, pretokenizer_name
from ..resolution import invalid
from ..resolved import ResolvedRun
from .common import counted_by, new_plan

KINDS = (VocabKind.UNIGRAM, VocabKind.LANGUAGE_UNIGRAM, VocabKind.WORDPIECE,
         VocabKind.LANGUAGE_WORDPIECE)


def check(settings: RunSettings, run: ResolvedRun, taken: set[str]) -> tuple[dict, dict]:
    """The algorithms, BPE first (every cost is relative to it), each checked against the
    sizes it trains at and the pre-tokenizers it trains after."""
    names, sizes, pretokenizers = settings.algorithms, run.sizes, run.pretokenizers
    if not names:
        raise RunError(f"{SETTING} needs at least one algorithm ({', '.join(ALGORITHMS)})",
                       setting="algorithms")
    # Each name is an algorithm: a type of the settings' own, refused as they are made.
    algorithms = list(dict.fromkeys([Algorithm.BPE, *names]))
    others = algorithms[1:]
    if others and not sizes:
        raise RunError(f"{SETTING} {others[0]} trains a vocabulary: give {setting('sizes')} too "
                       "(e.g. 4096)", setting="algorithms", value=str(others[0]))
    if others:
        from analyzer.external import TokenizerError
        from analyzer.external.library_trained import library, min_size

        try:
            library()
        except TokenizerError as error:
            raise invalid("algorithms", str(others[0]), f"{SETTING} {error}") from None
    for algorithm in others:
        for size in sizes:
            if not min_size(algorithm) <= size <= MAX_LIBRARY_SIZE:
                raise invalid("sizes", size, f"{SETTING} {size}: {algorithm} ({setting('algorithms')}) "
                              f"trains sizes from {min_size(algorithm)} (its byte symbols) to "
                              f"{MAX_LIBRARY_SIZE:,}")
    if Algorithm.WORDPIECE in others and NONE in pretokenizers:
        raise invalid("algorithms", "wordpiece", f"{SETTING} wordpiece needs a pre-tokenizer "
                      f"other than none ({setting('pretokenizers')}, e.g. words): it cuts words "
                      "into pieces, and a whole text as one chunk is not a word")
    return {"algorithms": algorithms}, {"algorithms": [str(a) for a in algorithms]}


def place(plan: JobPlan, run: ResolvedRun) -> tuple:
    """Its jobs follow BPE's (`builders.default_place`): by algorithm, size, every language
    then each one."""
    identity = plan.identity
    language = -1 if identity.language is None else run.languages.index(identity.language)
    return (1, run.made["algorithms"].index(identity.algorithm), plan.sizes[0], language)


def plans(run: ResolvedRun) -> list[JobPlan]:
    """Per pre-tokenizer, algorithm (other than BPE) and size: one job on every language and
    (`per_language`) one per language, each size its own training."""
    found = []
    for pretokenizer in run.pretokenizers:
        for algorithm in run.made["algorithms"][1:]:
            for size in run.sizes:
                found.append(new_plan(run, VocabularyId.library(algorithm), run.languages,
                                      run.languages, pretokenizer, sizes=[size]))
                if run.settings.per_language:
                    found += [new_plan(run, VocabularyId.library(algorithm, lang), [lang],
                                       counted_by(run, lang), pretokenizer, sizes=[size])
                              for lang in run.languages]
    return found


def stages(plan: JobPlan) -> list[Stage]:
    """What its training costs (`analyzer.runs.memory`): its engine on its pre-tokenizer's
    tables, merged into one packed table."""
    algorithm = plan.kind.algorithm
    cost = costs.UNIGRAM if algorithm == Algorithm.UNIGRAM else costs.WORDPIECE
    return [Stage(cost, pretokenizer_name(plan.pretokenizer),
                  plan.sizes[0] - min_size(algorithm or Algorithm.UNIGRAM))]


def build(job: VocabularyJob, report: Report | None = None) -> VocabularyRecord:
    """Train the job's one size with its library, then count every measured unit."""
    algorithm = job.kind.algorithm
    assert algorithm is not None and algorithm != Algorithm.BPE and len(job.sizes) == 1
    (size,) = job.sizes
    report = report or (lambda *args: None)
    report(job.label, "train", 0, 1)
    start = time.perf_counter()
    model = train_model(algorithm, job.training.chunk_table(job.pretokenizer), size,
                        job.pretokenizer, progress=lambda done, rounds, _pieces: report(
                            job.label, "rounds", done, max(rounds, 1)))
    seconds = time.perf_counter() - start
    report(job.label, "train", 1, 1)
    report(job.label, "count", 0, 1)
    splitter = resolve(job.pretokenizer)
    counted, histograms, roundtrip_ok = _count(model, job.measure)
    joined = count_joined(job.joined, lambda texts: {size: [
        sum(map(len, model.encode_chunks(model.chunks(text, 0)))) for text in texts]}, [size])
    report(job.label, "done", 1, 1)
    return VocabularyRecord(
        scope=job.scope, kind=job.kind, size=size, counts={size: counted}, joined=joined,
        trained_bytes=job.training.n_bytes(),
        stop_reason=None if model.size == size else
        f"the training text has pieces for {model.size:,} entries only",
        seconds=round(seconds, 3), roundtrip_ok=roundtrip_ok, pretokenizer=job.pretokenizer,
        pattern=splitter.pattern if splitter else None, histograms={size: histograms},
        models={size: model.document.decode("utf-8")})


def _count(model: LibraryModel, measure: dict[str, list[str]]
           ) -> tuple[dict[str, list[int]], dict[str, dict[int, int]], bool]:
    """Each language's tokens per unit, its token histogram, and whether every unit's tokens
    give its bytes back.

    A language's units are cut into chunks at once (`chunk_texts`, lossless: checked), each
    distinct chunk encoded once (`count_chunks`: the library's encoding, by the analyzer's
    compiled encoder where it is built), its tokens counted as often as it occurs, and its
    round trip checked once: a unit's tokens are its chunks' tokens, so it gives its bytes back
    when each of its chunks does. Counts, histogram and round trips are taken over arrays.
    """
    counts: dict[str, list[int]] = {}
    histograms: dict[str, dict[int, int]] = {}
    roundtrip_ok = True
    checked: set[str] = set()
    for lang, texts in measure.items():
        chunked = _chunked(model, texts)
        ids, lengths = model.count_chunks(chunked.chunks)
        per_chunk = np.concatenate([[0], np.cumsum(lengths[np.frombuffer(chunked.ids, np.uint32)],
                                                   dtype=np.int64)])
        offsets = np.frombuffer(chunked.offsets, np.int64)
        counts[lang] = (per_chunk[offsets[1:]] - per_chunk[offsets[:-1]]).tolist()
        histograms[lang] = _histogram(ids, lengths, list(chunked.counts))
        if roundtrip_ok:
            new = np.array([chunk not in checked for chunk in chunked.chunks], dtype=bool)
            roundtrip_ok = model.spells([chunk for chunk, fresh in zip(chunked.chunks, new)
                                         if fresh], ids[np.repeat(new, lengths)], lengths[new])
            checked.update(chunked.chunks)
    return counts, histograms, roundtrip_ok


def _chunked(model: LibraryModel, texts: list[str]) -> Chunked:
    """The texts cut by the model's pre-tokenizer (each text one chunk, without one)."""
    if model.splitter is not None:
        return chunk_texts(texts, model.splitter)
    place: dict[str, int] = {}
    for text in texts:
        place.setdefault(text, len(place))
    distinct = Counter(texts)
    return Chunked(list(place), [distinct[text] for text in place],
                   array("I", [place[text] for text in texts]), array("q", range(len(texts) + 1)))


def _histogram(ids: np.ndarray, lengths: np.ndarray, times: list[int]) -> dict[int, int]:
    """How often each token occurs: chunks' ids end to end (`lengths` of them each), each chunk
    occurring `times`.

    >>> _histogram(np.array([5, 7, 7]), np.array([2, 1]), [2, 3])
    {5: 2, 7: 5}
    """
    weights = np.repeat(np.asarray(times, np.int64), lengths)
    order = np.argsort(ids, kind="stable")
    tokens, starts = np.unique(ids[order], return_index=True)
    if not len(tokens):
        return {}
    return dict(zip(tokens.tolist(), np.add.reduceat(weights[order], starts).tolist()))


def combine(records: list[VocabularyRecord]) -> list[VocabularyRecord]:
    """The records of one-size jobs joined per vocabulary (kind, scope, pre-tokenizer), at the
    place of its first; every other record as it is.

    >>> one = VocabularyRecord("unigram", VocabKind.UNIGRAM, 512, {512: {}}, seconds=1.0,
    ...                        pretokenizer="none", histograms={512: {}}, models={512: "{}"},
    ...                        roundtrip_ok=True)
    >>> both = combine([one, replace(one, size=1024, counts={1024: {}},
    ...                       histograms={1024: {}}, models={1024: "{}"})])
    >>> [(r.size, sorted(r.counts), r.seconds) for r in both]
    [(1024, [512, 1024], 2.0)]
    """
    combined: list[VocabularyRecord] = []
    at: dict[tuple, int] = {}
    for record in records:
        if record.kind.has_merges or record.models is None:
            combined.append(record)
            continue
        key = (record.kind, record.scope, record.pretokenizer)
        if key not in at:
            at[key] = len(combined)
            combined.append(record)
            continue
        first = combined[at[key]]
        combined[at[key]] = replace(
            first, size=max(first.size, record.size),
            counts={**first.counts, **record.counts},
            joined={**first.joined, **record.joined} if first.joined and record.joined else None,
            seconds=round((first.seconds or 0) + (record.seconds or 0), 3),
            roundtrip_ok=bool(first.roundtrip_ok) and bool(record.roundtrip_ok),
            stop_reason=first.stop_reason or record.stop_reason,
            histograms={**(first.histograms or {}), **(record.histograms or {})},
            models={**(first.models or {}), **record.models})
    for record in combined:  # sizes in order, as a BPE vocabulary's are
        if record.models is not None:
            record.counts = dict(sorted(record.counts.items()))
            record.models = dict(sorted(record.models.items()))
    return combined
