"""BPE by the analyzer's engine: the shared vocabulary and each language's own (and, for
`parity`, the parity-aware one: the engine's parity mode). One training at the largest size
gives every smaller size (a size is a prefix), so one replay counts them all."""

from __future__ import annotations

import time

from analyzer import bpe
from analyzer.identity import VocabKind, VocabularyId
from analyzer.store import StoredMerge, VocabularyRecord

from .. import costs
from ..costs import Stage
from ..plan import (
    JobPlan,
    Report,
    VocabularyJob,
    count_joined,
    pretokenizer_name,
    progress_reporter,
    split_by_language,
)
from ..resolved import ResolvedRun
from .common import counted_by, new_plan

KINDS = (VocabKind.SHARED, VocabKind.LANGUAGE)


def plans(run: ResolvedRun) -> list[JobPlan]:
    """Per pre-tokenizer: the shared vocabulary, and each language's own (`per_language`)."""
    if not run.sizes:
        return []
    found = []
    for pretokenizer in run.pretokenizers:
        found.append(new_plan(run, VocabularyId.shared(), run.languages, run.languages, pretokenizer))
        if run.settings.per_language:
            found += [new_plan(run, VocabularyId.own(lang), [lang], counted_by(run, lang),
                               pretokenizer) for lang in run.languages]
    return found


def stages(plan: JobPlan) -> list[Stage]:
    """What its training costs (`analyzer.runs.memory`): the engine on its pre-tokenizer's
    tables, laid out as bytes."""
    return [Stage(costs.TABLES, pretokenizer_name(plan.pretokenizer), plan.sizes[-1] - 256)]


def build(job: VocabularyJob, report: Report | None = None) -> VocabularyRecord:
    """Train at the largest size, then count every measured text at every size."""
    largest = job.sizes[-1]
    report = report or (lambda *args: None)
    on_merge = progress_reporter(job.label, report, largest)
    start = time.perf_counter()
    training = job.training.train_bpe(
        largest, parity=job.kind == VocabKind.PARITY, dev=job.dev,
        global_merges=job.global_merges, pretokenizer=job.pretokenizer,
        min_pair_count=job.min_pair_count, tie_break=job.tie_break, progress=on_merge)
    seconds = time.perf_counter() - start
    report(job.label, "count", 0, 1)
    vocabulary = bpe.Vocabulary(training.merges, job.pretokenizer)
    # A vocabulary that stopped early has no larger sizes: those equal its final size.
    reachable = sorted({min(size, vocabulary.size) for size in job.sizes})
    languages = list(job.measure)
    texts = [text for lang in languages for text in job.measure[lang]]
    measured = vocabulary.measure(texts, reachable, roundtrip=True)
    counts = {size: split_by_language(measured.counts[min(size, vocabulary.size)], job.measure)
              for size in job.sizes}
    statistics = dict(zip(languages, vocabulary.token_statistics(
        [job.measure[lang] for lang in languages], reachable)))
    joined = count_joined(job.joined, lambda found: {
        size: counts[min(size, vocabulary.size)]
        for counts in [vocabulary.count_tokens(found, reachable)] for size in job.sizes},
        job.sizes)
    report(job.label, "done", 1, 1)
    pretokenizer = vocabulary.pretokenizer
    chunks = None
    if measured.chunks is not None and job.kind == VocabKind.SHARED:  # it measures every language
        chunks = split_by_language(measured.chunks, job.measure)
    return VocabularyRecord(
        scope=job.scope, kind=job.kind, size=largest, counts=counts, joined=joined,
        trained_bytes=training.n_bytes, merges_learned=len(training.merges),
        stop_reason=training.stop_reason, seconds=round(seconds, 3),
        roundtrip_ok=measured.roundtrip_ok,
        merges=[StoredMerge(left, right, new_id, count, vocabulary.token_bytes(new_id))
                for ((left, right), new_id), count in zip(training.merges, training.counts)],
        pretokenizer=job.pretokenizer, pattern=pretokenizer.pattern if pretokenizer else None,
        chunks=chunks,
        chosen=training.chosen if job.kind == VocabKind.PARITY else None,
        replaced_in_training=training.replaced_by_language,
        replaced_in_measured={lang: found.replaced for lang, found in statistics.items()},
        histograms={size: {lang: found.histograms[min(size, vocabulary.size)]
                           for lang, found in statistics.items()} for size in job.sizes},
    )
