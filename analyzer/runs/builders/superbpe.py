"""SuperBPE vocabularies (Liu et al. 2025): ordinary BPE up to a transition size T with the
run's pre-tokenizer, then BPE continued to the largest size with SuperBPE's stage-2
pre-tokenizer (`superbpe`), which lets merges cross the spaces between words (superwords).

Stage 1 is exactly the run's shared vocabulary cut at T (a size is a prefix), trained here
again so that the job stands alone; stage 2 is `bpe.train_by_language(..., base=stage 1)`:
every stage-2 chunk encoded with stage 1, then BPE on those ids. A size up to T is counted as
the ordinary vocabulary counts it; a larger size is the whole list up to it with the stage-2
pre-tokenizer, as SuperBPE's tokenizer encodes.

The measured replacements of a merge are how much each language's token count falls from its
size to the next, so that the stored curve gives every size's count exactly; at the
transition that fall includes the change of pre-tokenizer.
"""

from __future__ import annotations

import time

from analyzer import bpe
from analyzer.bpe.pretokenize import SUPERBPE, Splitter
from analyzer.bpe.pretokenize import resolve as resolve_pretokenizer
from analyzer.errors import SETTING, setting
from analyzer.identity import VocabKind, VocabularyId
from analyzer.settings import MIN_SIZE, RunSettings
from analyzer.store import StoredMerge, VocabularyRecord

from .. import costs
from ..costs import Stage
from ..errors import RunError
from ..plan import (
    JobPlan,
    Report,
    VocabularyJob,
    count_joined,
    pretokenizer_name,
    progress_reporter,
    split_by_language,
)
from ..resolution import invalid
from ..resolved import ResolvedRun
from .common import counted_by, new_plan

KINDS = (VocabKind.SUPERBPE, VocabKind.LANGUAGE_SUPERBPE)

STAGE_TWO = SUPERBPE
"""The pre-tokenizer of the second stage: SuperBPE's published pattern, split around."""


def check(settings: RunSettings, run: ResolvedRun, taken: set[str]) -> tuple[dict, dict]:
    """SuperBPE's transition sizes: each inside the trained sizes, below the largest (the
    second stage goes from there to the largest): sorted, without repeats."""
    transitions, sizes = settings.superbpe, run.sizes
    if transitions and not sizes:
        raise RunError(f"{SETTING} trains a vocabulary: give {setting('sizes')} too (e.g. 4096)",
                       setting="superbpe")
    for transition in transitions:
        if isinstance(transition, bool) or not isinstance(transition, int) or \
                not MIN_SIZE <= transition < max(sizes):
            raise invalid("superbpe", transition,
                          f"{SETTING} {transition}: the transition is a size from {MIN_SIZE} to "
                          f"below the largest of {setting('sizes')} ({max(sizes)}), where the "
                          "second stage ends")
    found = sorted(set(transitions))
    return {"superbpe": found}, {"superbpe": found}


def splitters(run: ResolvedRun) -> dict[str, Splitter | None]:
    """The second stage's pre-tokenizer, when the run has SuperBPE vocabularies."""
    return {STAGE_TWO: resolve_pretokenizer(STAGE_TWO)} if run.made["superbpe"] else {}


def plans(run: ResolvedRun) -> list[JobPlan]:
    """Per pre-tokenizer and transition: SuperBPE on every language, and each language's own
    (`per_language`)."""
    found = []
    for pretokenizer in run.pretokenizers:
        for transition in run.made["superbpe"]:
            found.append(new_plan(run, VocabularyId.superbpe(transition), run.languages,
                                  run.languages, pretokenizer))
            if run.settings.per_language:
                found += [new_plan(run, VocabularyId.superbpe(transition, lang), [lang],
                                   counted_by(run, lang), pretokenizer) for lang in run.languages]
    return found


def stages(plan: JobPlan) -> list[Stage]:
    """What its training costs (`analyzer.runs.memory`), a stage after the other: stage 1
    on its pre-tokenizer's tables, stage 2 on stage 2's, each chunk encoded by stage 1."""
    transition = plan.identity.transition or 256
    return [Stage(costs.TABLES, pretokenizer_name(plan.pretokenizer), transition - 256),
            Stage(costs.CONTINUED, STAGE_TWO, plan.sizes[-1] - transition)]


def build(job: VocabularyJob, report: Report | None = None) -> VocabularyRecord:
    """Train both stages, count every measured text at every size; one record."""
    transition = job.identity.transition
    assert transition is not None
    largest = job.sizes[-1]
    report = report or (lambda *args: None)
    on_merge = progress_reporter(job.label, report, largest)
    start = time.perf_counter()
    wanted = largest - 256  # progress counts the merges of both stages together
    first = job.training.train_bpe(transition, pretokenizer=job.pretokenizer,
                                   min_pair_count=job.min_pair_count, tie_break=job.tie_break,
                                   progress=lambda n, total: on_merge(n, wanted))
    done = len(first.merges)
    second = job.training.train_bpe(
        largest, base=first.merges, pretokenizer=STAGE_TWO, min_pair_count=job.min_pair_count,
        tie_break=job.tie_break, progress=lambda n, total: on_merge(done + n, wanted))
    seconds = time.perf_counter() - start
    report(job.label, "count", 0, 1)
    merges = first.merges + second.merges
    stage_one = bpe.Vocabulary(first.merges, job.pretokenizer)
    whole = bpe.Vocabulary(merges, STAGE_TWO)
    languages = list(job.measure)
    texts = [text for lang in languages for text in job.measure[lang]]
    groups = [job.measure[lang] for lang in languages]
    # Where stage 2 starts: T, or where stage 1 stopped if it stopped early.
    boundary = stage_one.size
    continued = bool(second.merges)
    one_sizes = sorted({min(size, boundary) for size in job.sizes
                        if size <= boundary or not continued} | {boundary})
    one = stage_one.measure(texts, one_sizes, roundtrip=True)
    one_stats = dict(zip(languages, stage_one.token_statistics(groups, one_sizes)))
    counts = {size: split_by_language(one.counts[min(size, boundary)], job.measure)
              for size in job.sizes if size <= boundary or not continued}
    histograms = {size: {lang: found.histograms[min(size, boundary)]
                         for lang, found in one_stats.items()}
                  for size in counts}
    replaced = {lang: found.replaced for lang, found in one_stats.items()}
    roundtrip_ok = one.roundtrip_ok
    if continued:
        two_sizes = sorted({min(size, whole.size) for size in job.sizes if size > boundary}
                           | {boundary})
        two = whole.measure(texts, two_sizes, roundtrip=True)
        two_stats = dict(zip(languages, whole.token_statistics(groups, two_sizes)))
        for size in job.sizes:
            if size > boundary:
                counts[size] = split_by_language(two.counts[min(size, whole.size)], job.measure)
                histograms[size] = {lang: found.histograms[min(size, whole.size)]
                                    for lang, found in two_stats.items()}
        before = split_by_language(one.counts[boundary], job.measure)
        after = split_by_language(two.counts[boundary], job.measure)
        for lang, found in two_stats.items():
            added = found.replaced[len(first.merges):]
            # The fall from T to T + 1: the change of pre-tokenizer, then the first stage-2 merge.
            added[0] += sum(before[lang]) - sum(after[lang])
            replaced[lang] = replaced[lang] + added
        roundtrip_ok = bool(one.roundtrip_ok) and bool(two.roundtrip_ok)
    joined = count_joined(job.joined, lambda found: _stage_counts(
        found, job.sizes, stage_one, whole if continued else None), job.sizes)
    report(job.label, "done", 1, 1)
    pair_counts = first.counts + second.counts
    return VocabularyRecord(
        scope=job.scope, kind=job.kind, size=largest, counts=counts, joined=joined,
        trained_bytes=first.n_bytes, merges_learned=len(merges),
        stop_reason=second.stop_reason if continued else first.stop_reason,
        seconds=round(seconds, 3), roundtrip_ok=roundtrip_ok,
        merges=[StoredMerge(left, right, new_id, count, whole.token_bytes(new_id))
                for ((left, right), new_id), count in zip(merges, pair_counts)],
        pretokenizer=job.pretokenizer,
        pattern=stage_one.pretokenizer.pattern if stage_one.pretokenizer else None,
        # Where stage 2 really starts: T, or where stage 1 stopped short of it (the sizes
        # between were counted by stage 2, so `tokenize` and the metrics must split there too).
        transition=boundary if continued else transition,
        replaced_in_training={lang: first.replaced_by_language[lang]
                              + second.replaced_by_language.get(lang, [])
                              for lang in first.replaced_by_language},
        replaced_in_measured=replaced,
        histograms=histograms,
    )


def _stage_counts(texts: list[str], sizes: list[int], stage_one: bpe.BaseVocabulary,
                  whole: bpe.BaseVocabulary | None) -> dict[int, list[int]]:
    """`{size: [tokens of each text]}`: a size up to stage 1's end counted by stage 1, a
    larger one (when stage 2 learned merges) by both stages under stage 2's split."""
    boundary = stage_one.size
    one = [size for size in sizes if size <= boundary or whole is None]
    two = [size for size in sizes if size not in one]
    found: dict[int, list[int]] = {}
    if one:
        counted = stage_one.count_tokens(texts, sorted({min(s, boundary) for s in one}))
        found.update({size: counted[min(size, boundary)] for size in one})
    if two:
        assert whole is not None
        counted = whole.count_tokens(texts, sorted({min(s, whole.size) for s in two}))
        found.update({size: counted[min(size, whole.size)] for size in two})
    return found
