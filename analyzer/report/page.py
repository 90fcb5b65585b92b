"""Write a run's HTML page, the index of runs, and plotly.js once per folder. Offline: a page
loads nothing but the plotly.js file beside it (or nothing at all when self-contained)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from html import escape
from pathlib import Path

import numpy as np
import plotly.io as pio
from plotly.offline import get_plotlyjs, get_plotlyjs_version
from sqlite_utils import Database

from analyzer import __version__
from analyzer.corpus import language_name
from analyzer.metrics import RunData, language_metrics, load_run_data, tokenizer_names
from analyzer.store import get_corpus, list_runs, load_merges, vocabularies, vocabulary_totals
from analyzer.store.corpora import CorpusSummary

from . import figures
from .colors import language_colors
from .tables import cost_table, merges_table, provenance_table

DEFAULT_OUT = Path("reports")
MERGES_SHOWN = 20
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 1200px; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2.5rem; font-size: 1.25rem; }
.lead { font-size: 1.15rem; } .muted { color: #666; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .9rem; }
th, td { border-bottom: 1px solid #ddd; padding: .25rem .6rem; text-align: left; vertical-align: top; }
table.numbers td:not(:first-child) { text-align: right; font-variant-numeric: tabular-nums; }
details { margin: .3rem 0; } summary { cursor: pointer; font-weight: 600; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.figure { margin: 1rem 0 2rem; }
"""


@dataclass
class Page:
    html: str
    figures: list  # the plotly figures, in page order (tests count their traces)


def plotly_file_name() -> str:
    return f"plotly-{get_plotlyjs_version()}.min.js"


def write_report(db: Database, run_id: int, out: Path = DEFAULT_OUT, *, self_contained: bool = False,
                 price: float = 1.0, context: int = 128_000) -> Path:
    """Write reports/run-<id>.html (and plotly.js, and the index); return the page's path."""
    out.mkdir(parents=True, exist_ok=True)
    page = build_page(db, run_id, self_contained=self_contained, price=price, context=context)
    if not self_contained:
        ensure_plotlyjs(out)
    path = out / f"run-{run_id}.html"
    write_atomically(path, page.html)
    write_index(db, out)
    return path


def write_atomically(path: Path, text: str) -> None:
    """Write through a temporary file and a rename: a reader (or a later run that checks the
    file exists) never sees half a page, even if this process is killed while writing."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)


def ensure_plotlyjs(out: Path) -> Path:
    path = out / plotly_file_name()
    if not path.exists():
        write_atomically(path, get_plotlyjs())
    return path


def build_page(db: Database, run_id: int, *, self_contained: bool = False, price: float = 1.0,
               context: int = 128_000) -> Page:
    data = load_run_data(db, run_id)
    frame = language_metrics(data)
    run = data.run
    corpus = get_corpus_by_id(db, run.run.corpus_id)
    tokenizers = [(name, int(frame[frame["vocab"] == name]["size"].iloc[0]))
                  for name in tokenizer_names(frame, run.languages)]
    ctx = figures.Context(frame, run.run.pivot, run.sizes, run.languages,
                          language_colors(run.languages, run.run.pivot), tokenizers)
    sections: list[tuple[str, str, object]] = []
    if run.sizes:
        sections.append(("Overhead against vocabulary size", _intro_headline(ctx),
                         figures.headline(ctx)))
    if tokenizers:
        sections.append(("Production tokenizers",
                         "What real tokenizers charge each language for the same text, side by "
                         "side, counted by their own libraries.", figures.tokenizer_comparison(ctx)))
    if run.sizes:
        sections.append(("Overhead by language: bytes or vocabulary?",
                         "premium = byte premium x (bytes per token of the pivot / bytes per token "
                         "of the language). The grey bar is what the script's UTF-8 encoding alone "
                         "would cost.", figures.overhead_by_language(ctx)))
    if run.sizes and run.run.per_language:
        sections.append(("Shared vs own vocabulary",
                         "The same size, trained on all languages or on one: the gap is what "
                         "sharing costs each language.", figures.shared_vs_own(ctx)))
    if run.run.cross_matrix:
        sections.append(("Vocabulary trained on X, text in Y",
                         "Bytes per token of each language under each language's vocabulary.",
                         figures.cross_heatmap(ctx)))
    if run.sizes:
        sections.append(("Bytes per token", "How many UTF-8 bytes one token carries, per language.",
                         figures.bytes_per_token(ctx)))
    sections.append(("How steady is the tax?",
                     "Each box is the per-unit premium over the measured units; the diamond is the "
                     "premium over all of them with its 95 % bootstrap interval.",
                     figures.unit_premiums(ctx, _unit_premiums(data, *ctx.primary))))
    parts = []
    for index, (title, intro, figure) in enumerate(sections):
        div = pio.to_html(figure, full_html=False, include_plotlyjs=False, div_id=f"figure-{index}",
                          config={"displaylogo": False, "responsive": True})
        parts.append(f"<section><h2>{escape(title)}</h2><p class='muted'>{escape(intro)}</p>"
                     f"<div class='figure'>{div}</div></section>")
    vocabs = vocabularies(db, run_id)
    merges = "".join(
        merges_table(f"{'shared vocabulary' if v.scope == 'shared' else language_name(v.scope) + ' (' + v.scope + ')'}"
                     f": first {MERGES_SHOWN} of {v.merges_learned:,} merges",
                     load_merges(db, run_id, v.scope), MERGES_SHOWN)
        for v in vocabs if v.kind == "trained")
    if merges:
        parts.append(f"<section><h2>Merges</h2><p class='muted'>The first merges each vocabulary "
                     f"learned; tokens that are not whole UTF-8 characters are shown as bytes."
                     f"</p>{merges}</section>")
    vocab, size = ctx.primary
    under = f"the shared vocabulary at size {size:,}" if vocab == "shared" else vocab
    costs = "".join(f"<h3>{escape(name)}</h3>{cost_table(frame, ctx.pivot, name, n, price, context)}"
                    for name, n in tokenizers)
    parts.append(f"<section><h2>What it costs</h2>"
                 f"<p class='muted'>The measured text of each language under {escape(under)}.</p>"
                 f"{cost_table(frame, ctx.pivot, vocab, size, price, context)}{costs}</section>")
    parts.append(f"<section><h2>Provenance</h2>{provenance_table(_provenance(run, corpus, vocabs))}"
                 "</section>")
    plotly_script = (f"<script>{get_plotlyjs()}</script>" if self_contained
                     else f"<script src='{plotly_file_name()}'></script>")
    title = f"Tokenization tax: run {run_id} on {run.corpus}"
    html = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{escape(title)}</title><style>{STYLE}</style>{plotly_script}</head><body>"
            f"<p class='muted'><a href='index.html'>All runs</a></p><h1>{escape(title)}</h1>"
            f"<p class='lead'>{escape(_lead(ctx))}</p>{''.join(parts)}"
            f"<p class='muted'>Written by analyzer {escape(__version__)}.</p></body></html>")
    return Page(html, [figure for _, _, figure in sections])


def get_corpus_by_id(db: Database, corpus_id: int) -> CorpusSummary:
    name = db.execute("SELECT name FROM corpora WHERE id = ?", [corpus_id]).fetchone()[0]
    return get_corpus(db, name)


def write_index(db: Database, out: Path = DEFAULT_OUT) -> Path:
    """reports/index.html: every run, with a link where its page exists."""
    rows = []
    for summary in reversed(list_runs(db)):
        r = summary.run
        page = out / f"run-{r.id}.html"
        link = f"<a href='{page.name}'>run {r.id}</a>" if page.exists() else f"run {r.id}"
        worst = ""
        if r.status == "complete":
            production = [(v.scope, v.size) for v in vocabularies(db, r.id) if v.kind == "production"]
            scope, size = ("shared", max(summary.sizes)) if summary.sizes else production[0]
            totals = vocabulary_totals(db, r.id, scope, size)
            if r.pivot in totals and len(totals) > 1:
                lang = max((l for l in totals if l != r.pivot), key=lambda l: totals[l])
                worst = f"{language_name(lang)} {totals[lang] / totals[r.pivot] - 1:+.0%}"
        rows.append(f"<tr><td>{link}</td><td>{escape(summary.corpus)}</td><td>{escape(r.status)}</td>"
                    f"<td>{len(summary.languages)}</td><td>{escape(', '.join(map(str, summary.sizes)))}</td>"
                    f"<td>{escape(r.started)}</td><td>{escape(worst)}</td></tr>")
    html = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>analyzer runs</title>"
            f"<style>{STYLE}</style></head><body><h1>Runs</h1><table><thead><tr><th>run</th>"
            f"<th>corpus</th><th>status</th><th>languages</th><th>sizes</th><th>date</th>"
            f"<th>highest overhead (shared, largest size)</th></tr></thead><tbody>{''.join(rows)}"
            f"</tbody></table></body></html>")
    path = out / "index.html"
    write_atomically(path, html)
    return path


def _unit_premiums(data: RunData, vocab: str, size: int) -> dict[str, np.ndarray]:
    counts = data.counts[(vocab, size)]
    pivot = counts[data.run.run.pivot]
    return {lang: tokens / pivot for lang, tokens in counts.items()}


def _lead(ctx: figures.Context) -> str:
    vocab, size = ctx.primary
    rows = ctx.rows(vocab, size)
    at = rows[rows["lang"] != ctx.pivot]
    if at.empty:
        return "One language only: nothing to compare."
    more = int((at["overhead"] > 0.005).sum())
    under = f"a shared vocabulary of {size:,}" if vocab == "shared" else vocab
    return (f"{more} of {len(at)} languages need more tokens than {language_name(ctx.pivot)} for the "
            f"same content under {under}. "
            f"{figures.html.unescape(figures.headline_finding(ctx))}.")


def _intro_headline(ctx: figures.Context) -> str:
    return (f"Extra tokens each language needs for the same text as {language_name(ctx.pivot)}, "
            "under one vocabulary trained on all languages, as the vocabulary grows. 0 % means as "
            "many tokens as the pivot; +100 % means twice as many.")


def _provenance(run, corpus: CorpusSummary, vocabs) -> list[tuple[str, str]]:
    r = run.run
    measured = (f"{len(run.measured_units)} held-out units (holdout {r.holdout:g}, seed {r.seed})"
                if r.holdout else f"the training units themselves (all {len(run.measured_units)})")
    timings = ", ".join(f"{v.scope} {v.seconds:.1f} s" for v in vocabs if v.seconds is not None)
    production = [(f"tokenizer {v.scope}", f"{v.size:,} tokens; {v.library}; {v.source}")
                  for v in vocabs if v.kind == "production"]
    return production + [
        ("corpus", f"{corpus.corpus.name} ({corpus.corpus.source}, {corpus.corpus.format})"),
        ("content hash", corpus.corpus.content_hash),
        ("texts", "NFC-normalised" if corpus.corpus.nfc else "as given"),
        ("languages", ", ".join(f"{language_name(l)} ({l})" for l in run.languages)),
        ("sizes", ", ".join(f"{s:,}" for s in run.sizes) or "none (production tokenizers only)"),
        ("pivot", f"{language_name(r.pivot)} ({r.pivot})"),
        ("measured on", measured),
        ("vocabularies", ("shared" + (", one per language" if r.per_language else "")
                          + (", cross matrix" if r.cross_matrix else "")) if run.sizes else "none trained"),
        ("tie-break, min pair count", f"{r.tie_break}, {r.min_pair_count}"),
        ("engine", r.engine_version),
        ("run", f"started {r.started}, finished {r.finished}, {r.seconds or 0:.1f} s"),
        ("training time", timings),
    ]
