"""BPE of the pivot alone: the vocabulary most models ship (trained on English, counted on every
language), beside the run's shared one; with a section of its own, what training on the pivot
alone costs each language, drawn in the terminal and the report."""

from __future__ import annotations

import sys
import time

import pandas as pd
import plotly.graph_objects as go

from analyzer import bpe
from analyzer.cli.tables import new_table
from analyzer.cli.views import TERMINAL_VIEWS
from analyzer.corpus import language_name
from analyzer.identity import SHARED_SCOPE, Algorithm, KindAbout, KindSpec, VocabKind, VocabularyId
from analyzer.metrics import SECTIONS, Section, View
from analyzer.report.page import REPORT_VIEWS
from analyzer.runs import registry
from analyzer.runs.builders.common import new_plan
from analyzer.runs.plan import count_joined, progress_reporter, split_by_language
from analyzer.store import StoredMerge, VocabularyRecord

PIVOT_ONLY = VocabKind.register(KindSpec(
    "pivot-only",                       # the kind's name: what the store keeps
    KindAbout("BPE of the pivot alone", "#aa3377", shown_first=True),
    Algorithm.BPE,                      # its records' form: merges, every size a prefix
    word="pivot-only"))                 # its scope: the vocabulary's name in a run
SCOPE = VocabularyId(PIVOT_ONLY).scope


# The builder: this module (KINDS, plans, build), registered at the end.

KINDS = (PIVOT_ONLY,)


def plans(run):
    """One job per pre-tokenizer: trained on the pivot alone, counting every language."""
    if not run.sizes:
        return []
    return [new_plan(run, VocabularyId(PIVOT_ONLY), [run.pivot], run.languages, rule)
            for rule in run.pretokenizers]


def build(job, report=None):
    """Train BPE on the job's text (the pivot's: its plan chose it) at the largest size, then
    count every measured text at every size with the merges learned."""
    report = report or (lambda *args: None)
    largest = job.sizes[-1]
    start = time.perf_counter()
    training = job.training.train_bpe(
        largest, pretokenizer=job.pretokenizer, min_pair_count=job.min_pair_count,
        tie_break=job.tie_break, progress=progress_reporter(job.label, report, largest))
    seconds = time.perf_counter() - start
    vocabulary = bpe.Vocabulary(training.merges, job.pretokenizer)
    sizes = sorted({min(size, vocabulary.size) for size in job.sizes})  # it may stop early
    languages = list(job.measure)
    measured = vocabulary.measure([text for lang in languages for text in job.measure[lang]],
                                  sizes, roundtrip=True)
    statistics = dict(zip(languages, vocabulary.token_statistics(
        [job.measure[lang] for lang in languages], sizes)))
    report(job.label, "done", 1, 1)
    return VocabularyRecord(
        scope=job.scope, kind=job.kind, size=largest, seconds=round(seconds, 3),
        counts={size: split_by_language(measured.counts[min(size, vocabulary.size)], job.measure)
                for size in job.sizes},
        joined=count_joined(job.joined, lambda texts: {
            size: found[min(size, vocabulary.size)]
            for found in [vocabulary.count_tokens(texts, sizes)] for size in job.sizes},
            job.sizes),
        trained_bytes=training.n_bytes, merges_learned=len(training.merges),
        stop_reason=training.stop_reason, roundtrip_ok=measured.roundtrip_ok,
        merges=[StoredMerge(left, right, new_id, count, vocabulary.token_bytes(new_id))
                for ((left, right), new_id), count in zip(training.merges, training.counts)],
        pretokenizer=job.pretokenizer,
        pattern=vocabulary.pretokenizer.pattern if vocabulary.pretokenizer else None,
        replaced_in_training=training.replaced_by_language,
        replaced_in_measured={lang: found.replaced for lang, found in statistics.items()},
        histograms={size: {lang: found.histograms[min(size, vocabulary.size)]
                           for lang, found in statistics.items()} for size in job.sizes})


# Its section: a table computed from the run's records.

COLUMNS = ["pretokenizer", "size", "lang", "premium", "shared_premium", "tokens_vs_shared"]


def pivot_only_premiums(results):
    """Per pre-tokenizer, at the largest size: each language's premium under the pivot's
    vocabulary and under the shared one, and the tokens it needs under the pivot's against the
    shared one's (+0.30: 30 % more)."""
    frame = results.frame
    largest = frame[frame["size"] == max(results.run.sizes)]
    ours = largest[largest["vocab"] == SCOPE]
    shared = largest[largest["vocab"] == SHARED_SCOPE]
    found = ours.merge(shared, on=["pretokenizer", "size", "lang"], suffixes=("", "_shared"))
    found["shared_premium"] = found["premium_shared"]
    found["tokens_vs_shared"] = found["tokens"] / found["tokens_shared"] - 1
    return found[COLUMNS].reset_index(drop=True) if len(found) else pd.DataFrame(columns=COLUMNS)


SECTION = SECTIONS.register(Section("pivot_only_premiums", lambda run: bool(run.sizes),
                                    pivot_only_premiums, shown=True))


# Its views: a table under `analyzer show`'s first one, and a chart at the report's end.

def terminal_view(results, options):
    """The section as a table, for the shared view (`show`'s default) or this vocabulary's."""
    rows = results[SECTION.name]
    if rows.empty or options.vocab not in (SHARED_SCOPE, SCOPE):
        return []
    table = new_table("pre-tokenizer", "language", "premium", "shared's", "tokens vs shared",
                      title=f"Trained on the pivot alone, at {max(results.run.sizes):,}")
    for row in rows.itertuples():
        table.add_row(row.pretokenizer, row.lang, f"{row.premium:.2f}",
                      f"{row.shared_premium:.2f}", f"{row.tokens_vs_shared:+.1%}")
    return [[table]]


def report_view(view, results, costs):
    """Each language's extra tokens against the pivot under the shared vocabulary and the
    pivot's, at the largest size, for the page's first pre-tokenizer."""
    rows = results[SECTION.name]
    rows = rows[rows["pretokenizer"] == view.pretokenizer]
    if rows.empty:
        return []
    names = [language_name(lang) for lang in rows["lang"]]
    figure = go.Figure([go.Bar(x=names, y=[(value - 1) * 100 for value in rows[column]], name=name)
                        for column, name in (("shared_premium", "shared"), ("premium", SCOPE))])
    figure.update_layout(barmode="group", yaxis_title="extra tokens vs the pivot (%)",
                         title=f"At size {max(results.run.sizes):,}, pre-tokenizer "
                               f"{view.pretokenizer}")
    return [("Trained on the pivot alone",
             "The same size trained on the pivot's text alone, as most models' vocabularies "
             "are, beside the shared vocabulary trained on every language: the gap is what "
             "leaving a language out of training costs it.", figure)]


TERMINAL_VIEWS.register(View("pivot-only", SECTION.name, terminal_view), after="records")
REPORT_VIEWS.register(View("pivot-only", SECTION.name, report_view))
registry.register(sys.modules[__name__])  # this module is the builder: last, once it is whole
