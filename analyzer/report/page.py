"""A run's HTML page. Offline: it loads nothing but the plotly.js file beside it (or nothing at
all when self-contained)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from analyzer.bpe.pretokenize import NONE
from analyzer.bpe.readable import PARTIAL_KEY
from analyzer.corpus import language_name
from analyzer.errors import AnalyzerError
from analyzer.external import catalog
from analyzer.files import write_atomically
from analyzer.identity import SHARED_SCOPE
from analyzer.metrics import (
    PREMIUM_ESTIMATOR,
    UNIT_ESTIMATOR,
    RunResults,
    View,
    Views,
    counting_convention,
    estimators_note,
    headline_vocabulary,
    load_run_data,
    request_framing,
    special_tokens_counted,
    takeaways,
    tokenizer_label,
    tokenizer_sizes,
    unit_ratios,
)
from analyzer.queries import extension_base_bytes
from analyzer.runs.sample import count_floor_said
from analyzer.store import (
    AnalyzerDatabase,
    CorpusDetail,
    RunRead,
    VocabularyRead,
    get_corpus_by_id,
    load_merges,
)
from analyzer.version import __version__

from . import algorithms, extension, fairness, figures, split_rules, superbpe, vocabularies
from .answer import ABOVE, BELOW, HIGH, LOW, answer_table
from .calculator import bill_data, calculator, models_of, reference_tools
from .colors import language_colors
from .costs import content_note, cost_table, model_cost_table, model_costs_heatmap
from .files import (
    DEFAULT_OUT,
    ensure_plotlyjs,
    inline_scripts,
    inline_styles,
    page_data,
    plotly_script,
    without_local_paths,
)
from .glossary import glossary, linked
from .index import write_index
from .language_filter import filter_bar, language_names
from .navigation import COSTS_TITLE, Anchors, section, toolbar
from .tables import merges_table, provenance_table
from .takeaways import takeaway

MERGES_SHOWN = 20
FILTER_FROM = 4
"""Pages of this many languages or more get the language filter."""


@dataclass
class Page:
    html: str
    figures: list  # the plotly figures, in page order (tests count their traces)


def write_report(db: AnalyzerDatabase, run_id: int, out: Path = DEFAULT_OUT, *,
                 self_contained: bool = False, price: float = 1.0,
                 context_window: int = 128_000, prices: Path | None = None,
                 results: RunResults | None = None, full_paths: bool = False,
                 index_label: str = "All runs") -> Path:
    """Write reports/run-<id>.html (and plotly.js, and the index); return the page's path.
    `results` loaded against another reference language than the run's pivot write
    run-<id>-vs-<reference>.html beside it.
    `price` and `context_window` price the trained vocabularies (and tokenizers no model in the
    price table uses); `prices` is a price table of the user's instead of the packaged one;
    `results`, the run's as a command already computed them. The page names files (the
    corpus's, each tokenizer's) by name and SHA-256, never by where they lie on this machine,
    unless `full_paths` (a page for one's own machine). `index_label`: what its link to the
    index beside it says."""
    out.mkdir(parents=True, exist_ok=True)
    page = build_page(db, run_id, self_contained=self_contained, price=price,
                      context_window=context_window, prices=prices, results=results,
                      full_paths=full_paths, index_label=index_label)
    if not self_contained:
        ensure_plotlyjs(out)
    other = results is not None and results.run.pivot != (results.data.run_pivot
                                                          or results.run.pivot)
    path = out / (f"run-{run_id}-vs-{results.run.pivot}.html" if other and results else
                  f"run-{run_id}.html")
    write_atomically(path, page.html)
    write_index(db, out)
    return path


def build_page(db: AnalyzerDatabase, run_id: int, *, self_contained: bool = False,
               price: float = 1.0, context_window: int = 128_000,
               prices: Path | None = None, index_href: str = "index.html",
               results: RunResults | None = None, full_paths: bool = False,
               index_label: str = "All runs") -> Page:
    """The page of a complete run: its figures, merges, costs and provenance. `index_href`:
    where its `index_label` link goes (the index beside it; the service's own index; a
    results folder's page);
    `full_paths`: the provenance names files with this machine's folders."""
    results = results or RunResults(load_run_data(db, run_id))
    data, frame = results.data, results.frame
    run = data.run
    tokenizers = tokenizer_sizes(data.vocabularies)
    vocab, pretokenizer, size = headline_vocabulary(run, data.vocabularies)
    view = figures.RunView(frame, run.pivot, run.sizes, run.languages,
                           language_colors(run.languages, run.pivot), tokenizers, (vocab, size),
                           run.pretokenizers, run.pretokenizers[0])
    costs = results.model_costs(prices)
    sections = _sections(view, results, costs)
    anchors = Anchors()
    parts: list[tuple[str, str, str, str]] = []  # (anchor, title, takeaway, body), in order
    for index, (title, intro, figure) in enumerate(sections):
        div = pio.to_html(figure, full_html=False, include_plotlyjs=False, div_id=f"figure-{index}",
                          config={"displaylogo": False, "responsive": True})
        said = takeaway(title, results, costs)  # what this run shows, when it is said
        described = f"<p class='muted'>{escape(intro)}</p>" if said else ""
        # A chart over two screens scrolls in its box (a row per language stays readable).
        box = (f"<div class='figure tall' style='max-height: {figures.TALLEST_CHART}px'>"
               if (figure.layout.height or 0) > figures.TALLEST_CHART else "<div class='figure'>")
        parts.append((anchors.new(title), title, said or intro, f"{described}{box}{div}</div>"))
    merges = "".join(
        merges_table(f"{_vocabulary_title(v)}: first {MERGES_SHOWN} of {v.merges_learned:,} merges",
                     load_merges(db, run_id, v.scope, v.pretokenizer, MERGES_SHOWN), MERGES_SHOWN,
                     _base_bytes(db, run_id, v))
        for v in data.vocabularies if v.kind.has_merges)
    if merges:
        parts.append((anchors.new("Merges"), "Merges",
                      "The first merges each vocabulary learned, as the text they stand for; "
                      f"{PARTIAL_KEY}.", merges))
    parts.append((anchors.new(COSTS_TITLE), COSTS_TITLE, content_note(run.pivot),
                  _costs_section(view, costs, (vocab, pretokenizer, size), price, context_window,
                                 _caveats(data.vocabularies), run.id)))
    corpus = get_corpus_by_id(db, run.corpus_id)
    parts.append((anchors.new("Provenance"), "Provenance",
                  "What made these numbers: the corpus, the settings, the engine, each "
                  "tokenizer's files.",
                  provenance_table(_provenance(run, corpus, data.vocabularies, prices,
                                               full_paths))))
    title = f"Tokenization tax: run {run_id} on {run.corpus}"
    filters = filter_bar(run.languages) if len(run.languages) >= FILTER_FROM else ""
    answer = results.premium_table()
    priced = bill_data(models_of(costs, request_framing(data.vocabularies)),
                       [v.scope for v in data.vocabularies if v.kind.production])
    if answer.empty:
        lead, table = f"<p class='lead'>{escape(_lead(view))}</p>", ""
    else:
        # The sentences a reference language changes (static/reference.js says them again for
        # another), then the verdicts, which do not depend on it.
        lead = ("<div id='said'>" + "".join(f"<p class='lead'>{escape(sentence)}</p>"
                                            for sentence in takeaways(answer, run.pivot))
                + "</div>" + "".join(f"<p class='lead verdict'>{escape(sentence)}</p>"
                                     for sentence in results.verdicts().sentences()))
        note = estimators_note(run, "in each cell's hover")
        table = (reference_tools(run.languages, run.pivot, list(dict.fromkeys(answer["column"])),
                                 search=not filters)
                 + answer_table(answer, run.pivot, run.id) + f"<p class='muted'>{escape(note)}</p>"
                 + calculator(priced["counters"]))
    body = "".join(section(anchor, heading, content, linked(takeaway))
                   for anchor, heading, takeaway, content in parts)
    terms = anchors.new("Terms")
    parts.append((terms, "Terms", "", ""))  # in the toolbar; its section once the rest is made
    bar = toolbar([(anchor, heading) for anchor, heading, _, _ in parts], filters)
    body += section(terms, "Terms", glossary(lead + table + body),
                    linked("What the field's words mean, in plain words."))
    # Its scripts and styles are files of static/, inlined; the filter's names, the page's data.
    # The page data holds what the scripts need: the filter's names; the answer table's pivot
    # and colour scale (answer.cell_color's), for another reference; the calculator's models.
    scripts = (page_data({"names": language_names(run.languages), "pivot": run.pivot,
                          "scale": {"low": LOW, "high": HIGH, "above": ABOVE, "below": BELOW},
                          "bill": priced})
               + inline_scripts("page-data.js", "navigation.js", "tables.js", "reference.js",
                                "bill.js", *(["filter.js"] if filters else [])))
    html = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{escape(title)}</title>{inline_styles('report.css', 'answer.css')}"
            f"{plotly_script(self_contained)}</head><body>"
            f"<p class='muted'><a href='{escape(index_href, quote=True)}'>{escape(index_label)}</a></p>"
            f"<h1>{escape(title)}</h1>"
            f"{lead}{table}{bar}{body}"
            f"<p class='muted'>Written by analyzer {escape(__version__)}.</p>"
            f"{scripts}</body></html>")
    return Page(html, [figure for _, _, figure in sections])


Charts = list[tuple[str, str, go.Figure]]
"""(title, introduction, figure) of each chart, in page order."""


def _sizes_charts(view: figures.RunView, results: RunResults, costs: pd.DataFrame) -> Charts:
    """The overhead at each size, the split rules, the production tokenizers, the costs."""
    run = results.run
    charts: Charts = []
    several = len(run.pretokenizers) > 1
    if run.sizes:
        charts.append(("Overhead against vocabulary size", _intro_headline(view),
                       split_rules.headline_with_selector(view) if several
                       else figures.headline(view)))
    if run.sizes and (several or run.pretokenizers[0] != NONE):
        charts.append(("Split rules", "The pre-tokenizer decides where merges may not go: "
                       "each language's overhead under each rule, at the same vocabulary size.",
                       split_rules.overhead_by_rule(view)))
        charts.append(("Chunks per text", "premium = byte premium x (bytes per token of the "
                       "pivot / bytes per token of the language); how many chunks each rule cuts "
                       "a language into, relative to the pivot, is the split rule's part of the "
                       "bytes-per-token ratio.", split_rules.chunks_per_unit(view)))
    if view.tokenizers:
        charts.append(("Production tokenizers",
                       "What real tokenizers charge each language for the same text, side by "
                       "side, counted by their own libraries.", figures.tokenizer_comparison(view)))
    if not costs.empty:
        charts.append(("What the same content costs, by model",
                       "Each model's input price (from the price table, dated and sourced under "
                       "What it costs) times the tokens its tokenizer needs for the same content "
                       f"in each language. {content_note(run.pivot)} A bill also counts the "
                       "tokens a model's chat format adds to every request (its framing); where "
                       "it is known, the buttons switch to the same content sent as one request "
                       "per unit, which narrows the ratios: short messages cost every language "
                       "the same framing.",
                       model_costs_heatmap(costs, run.languages, run.pivot)))
    return charts


def _trained_with_fairness(results: RunResults) -> bool:
    return bool(results.run.sizes) and results.data.fairness is not None


def _parity_charts(view: figures.RunView, results: RunResults, costs: pd.DataFrame) -> Charts:
    """Parity-aware beside shared, what parity costs, and cost against fairness."""
    run = results.run
    if not _trained_with_fairness(results):
        return []
    split = view.pretokenizer
    charts: Charts = []
    configurations = results["summaries"]
    if run.parity:
        charts.append(("Shared vs parity-aware",
                       "The parity-aware vocabulary (Foroutan et al. 2025) gives each merge to "
                       "the language that compresses worst so far; the shared one to the most "
                       "frequent pair overall.", fairness.parity_by_language(view)))
        charts.append(("What parity costs",
                       "The spread of premiums across languages (Gini) and the tokens all "
                       "languages take together, with 95 % bootstrap intervals over the "
                       "measured units.", fairness.price_of_parity(configurations, split, run.sizes)))
    if len(configurations) > 1:
        charts.append(("Cost against fairness",
                       "Every configuration the run trained or measured: the tokens all "
                       "languages take (against the reference: the shared vocabulary at the "
                       "largest size) and the Gini of their premiums, with 95 % bootstrap "
                       f"intervals over the measured units, premiums against {language_name(run.pivot)}. "
                       "A star is on the frontier: no other configuration is both cheaper and "
                       "fairer. The hover names the language each charges most.",
                       fairness.frontier(configurations)))
    return charts


def _attribution_charts(view: figures.RunView, results: RunResults, costs: pd.DataFrame) -> Charts:
    if not _trained_with_fairness(results):
        return []
    shares = results["attribution"]
    shares = shares[shares["pretokenizer"] == view.pretokenizer]
    if shares.empty:
        return []
    return [("Who got the vocabulary",
             "Each merge is credited to the language whose occurrences it replaced most when it "
             "was learned (ties split); a language's first merge is the first token its text "
             "uses. Weights of a training mix are applied.",
             fairness.who_got_the_vocabulary(view, shares))]


def _equal_cost_charts(view: figures.RunView, results: RunResults, costs: pd.DataFrame) -> Charts:
    run = results.run
    if not _trained_with_fairness(results):
        return []
    # The reference is the largest size but one: every language can then be seen to reach it
    # (or not) within the merges trained (show --json's default is the largest size).
    reference = run.sizes[-2] if len(run.sizes) > 1 else run.sizes[-1]
    found = results.equal_cost_sizes(reference)
    if not found:
        return []
    return [("Equal-cost vocabulary size",
             "The smallest vocabulary at which a language's text takes no more tokens than the "
             f"pivot's at {reference:,} (Arnett et al. 2025), exact at every size from each "
             f"merge's replacements in the measured units; the merges trained go up to "
             f"{max(run.sizes):,}.", fairness.equal_cost(view, found, view.pretokenizer))]


def _allocation_charts(view: figures.RunView, results: RunResults, costs: pd.DataFrame) -> Charts:
    if not _trained_with_fairness(results):
        return []
    return [("Vocabulary allocation",
             "Utilisation (Limisiewicz et al. 2023) and Rényi efficiency (Zouhar et al. 2023) of "
             "the shared vocabulary for each language, from its token counts.",
             fairness.allocation(view))]


def _divergence_charts(view: figures.RunView, results: RunResults, costs: pd.DataFrame) -> Charts:
    if not _trained_with_fairness(results):
        return []
    return [("Divergence between languages",
             "Languages grouped by script; two languages that share no tokens are 1 bit apart.",
             fairness.divergence(view, results["divergence"], SHARED_SCOPE, view.pretokenizer))]


def _superbpe_charts(view: figures.RunView, results: RunResults, costs: pd.DataFrame) -> Charts:
    if results.data.fairness is None:
        return []
    return superbpe.sections(view, results["superbpe_effects"], results.data.vocabularies,
                             results["own_superbpe_effects"])


def _extension_charts(view: figures.RunView, results: RunResults, costs: pd.DataFrame) -> Charts:
    if results.data.fairness is None:
        return []
    return extension.sections(view, results.data, results["extension_reach"])


def _algorithm_charts(view: figures.RunView, results: RunResults, costs: pd.DataFrame) -> Charts:
    return algorithms.sections(view, results["algorithm_premiums"])


def _vocabulary_charts(view: figures.RunView, results: RunResults, costs: pd.DataFrame) -> Charts:
    return vocabularies.sections(view, results["vocabulary_scripts"],
                                 results["vocabulary_overlaps"], results.frame)


def _language_charts(view: figures.RunView, results: RunResults, costs: pd.DataFrame) -> Charts:
    """Each language's overhead, shared against own, the cross matrix, bytes per token and
    the spread over units."""
    run = results.run
    charts: Charts = []
    if run.sizes:
        charts.append(("Overhead by language: bytes or vocabulary?",
                       "premium = byte premium x (bytes per token of the pivot / bytes per token "
                       "of the language). The grey bar is what the script's UTF-8 encoding alone "
                       "would cost.", figures.overhead_by_language(view)))
    if run.sizes and run.per_language:
        charts.append(("Shared vs own vocabulary",
                       "The same size, trained on all languages or on one: the gap is what "
                       "sharing costs each language.", figures.shared_vs_own(view)))
    if run.cross:
        charts.append(("Vocabulary trained on X, text in Y",
                       "Bytes per token of each language under each language's vocabulary.",
                       figures.cross_heatmap(view)))
    if run.sizes:
        charts.append(("Bytes per token", "How many UTF-8 bytes one token carries, per language.",
                       figures.bytes_per_token(view)))
    charts.append(("How steady is the tax?",
                   "Each box is a language's per-unit premiums over the measured units, under "
                   f"each tokenizer, on a log scale; the diamond is its premium (the "
                   f"{PREMIUM_ESTIMATOR}), the circle the {UNIT_ESTIMATOR}, each with its 95 % "
                   "bootstrap interval.",
                   figures.unit_premiums(view, _unit_spreads(results))))
    return charts


ReportView = Callable[[figures.RunView, RunResults, pd.DataFrame], Charts]
"""What draws a report view: the run's view (`figures.RunView`: its frame, pivot, sizes,
languages' colours), its results and the model costs (`RunResults.model_costs`), to its charts,
each a section of the page under its title."""

REPORT_VIEWS: Views[ReportView] = Views("report view")
"""The page's charts in page order, each under the section (`analyzer.metrics.SECTIONS`) it
draws: shown when the run has that section. A plug-in's go at the end (after each language's
charts), or where it says (`after=`, `before=` a view's name)."""

for _view in (View("sizes", "records", _sizes_charts),
              View("parity", "summaries", _parity_charts),
              View("attribution", "attribution", _attribution_charts),
              View("equal_cost", "equal_cost_sizes", _equal_cost_charts),
              View("allocation", "records", _allocation_charts),
              View("divergence", "divergence", _divergence_charts),
              View("superbpe", "superbpe_effects", _superbpe_charts),
              View("extension", "extension_reach", _extension_charts),
              View("algorithms", "algorithm_premiums", _algorithm_charts),
              View("vocabularies", "vocabulary_scripts", _vocabulary_charts),
              View("languages", "records", _language_charts)):
    REPORT_VIEWS.register(_view)


def _sections(view: figures.RunView, results: RunResults, costs: pd.DataFrame) -> Charts:
    """(title, introduction, figure) for each chart the run has data for, in page order."""
    charts: Charts = []
    for make in REPORT_VIEWS.of(results.run):
        charts += make(view, results, costs)
    return [(title, intro, figures.pin_around_plot(figure)) for title, intro, figure in charts]


def _costs_section(view: figures.RunView, costs: pd.DataFrame,
                   headline: tuple[str, str | None, int], price: float, context_window: int,
                   caveats: dict[str, str], run: int) -> str:
    """Priced models first (each from the price table), then the headline vocabulary and any
    tokenizer no priced model uses, at the price and window the user named."""
    vocab, pretokenizer, size = headline
    priced = "".join(model_cost_table(costs[costs["model"] == model], run, view.pivot)
                     for model in dict.fromkeys(costs["model"]))
    if priced:
        warnings = "".join(f"<p class='muted'><strong>{escape(name)}</strong>: {escape(caveat)}</p>"
                           for name, caveat in caveats.items() if name in set(costs["tokenizer"]))
        priced = (f"<h3>Models</h3><p class='muted'>Per model: the same content as input and as "
                  f"output; how much of the same content its context window holds, against the "
                  f"pivot (a language with a +25 % premium fits 80 %); and how many characters "
                  f"of the language's own text that is.</p>{warnings}{priced}")
    hypothetical = []
    if view.sizes:
        under = f"the shared vocabulary at size {size:,}" if vocab == SHARED_SCOPE else vocab
        if vocab == SHARED_SCOPE and pretokenizer != NONE:
            under += f" (pre-tokenizer {pretokenizer})"
        hypothetical.append((under, vocab, size))
    used = set(costs["tokenizer"])
    hypothetical += [(name, name, n) for name, n in view.tokenizers if name not in used]
    tables = "".join(f"<h3>{escape(title)}</h3>"
                     f"{cost_table(view.frame, view.pivot, name, n, price, context_window, run)}"
                     for title, name, n in hypothetical)
    if tables:
        tables = (f"<p class='muted'>At an assumed US${price:g} per million tokens and a "
                  f"{context_window:,}-token window (analyzer report --price, --context):</p>"
                  f"{tables}")
    return f"<p class='muted'>{escape(content_note(view.pivot))}</p>{priced}{tables}"


def _base_bytes(db: AnalyzerDatabase, run_id: int, vocabulary: VocabularyRead):
    """An extension's base's token bytes, to show the parts of its merges; None for other
    vocabularies, and for an extension whose base is not on this machine (ids shown)."""
    if not vocabulary.kind.extends:
        return None
    try:
        return extension_base_bytes(db, run_id, vocabulary.scope)
    except AnalyzerError:
        return None


def _vocabulary_title(vocabulary: VocabularyRead) -> str:
    split = "" if vocabulary.pretokenizer in (None, NONE) else f", pre-tokenizer {vocabulary.pretokenizer}"
    language = vocabulary.identity.language  # a language's own: named by its language
    if language is not None:
        return f"{language_name(language)} ({vocabulary.scope}){split}"
    return f"{vocabulary.scope} vocabulary{split}"


def _unit_spreads(results: RunResults) -> list[figures.UnitSpread]:
    """What the box plot of unit premiums draws: the run's headline vocabulary, then every
    production tokenizer (each its rows of the frame and its units' ratios)."""
    data, frame = results.data, results.frame
    run = data.run
    headline = headline_vocabulary(run, data.vocabularies)
    keys = [headline] + [(name, None, size) for name, size in tokenizer_sizes(data.vocabularies)
                         if (name, None, size) != headline]
    found = []
    for vocab, pretokenizer, size in keys:
        counts = data.counts[(vocab, pretokenizer, size)]
        if run.pivot not in counts:
            continue
        langs = [lang for lang in run.languages if lang in counts]
        ratios = unit_ratios(np.vstack([counts[lang] for lang in langs]), langs.index(run.pivot))
        rows = frame[(frame["vocab"] == vocab) & (frame["size"] == size)]
        if pretokenizer is not None:
            rows = rows[rows["pretokenizer"] == pretokenizer]
        name = f"{vocab} {size:,}" if pretokenizer is not None else vocab
        found.append(figures.UnitSpread(name, rows.set_index("lang"), dict(zip(langs, ratios))))
    return found


def _lead(view: figures.RunView) -> str:
    vocab, size = view.primary
    rows = view.rows(vocab, size)
    at = rows[rows["lang"] != view.pivot]
    if at.empty:
        return "One language only: nothing to compare."
    more = int((at["overhead"] > 0.005).sum())
    under = f"a shared vocabulary of {size:,}" if vocab == SHARED_SCOPE else vocab
    return (f"{more} of {len(at)} languages need more tokens than {language_name(view.pivot)} for "
            f"the same content under {under}. "
            f"{figures.html.unescape(figures.headline_finding(view))}.")


def _intro_headline(view: figures.RunView) -> str:
    return (f"Extra tokens each language needs for the same text as {language_name(view.pivot)}, "
            "under one vocabulary trained on all languages, as the vocabulary grows. 0 % means as "
            "many tokens as the pivot; +100 % means twice as many.")


def _caveats(vocabs: list[VocabularyRead]) -> dict[str, str]:
    """What must not be read into a catalog tokenizer's counts, by the run's tokenizer names."""
    entries = catalog()
    return {v.scope: entries[v.scope].caveat for v in vocabs
            if v.kind.production and v.scope in entries and entries[v.scope].caveat}


def _training_source(run: RunRead) -> list[tuple[str, str]]:
    """What a run that trained on a source took of it, language by language."""
    training = run.training
    if not training:
        return []
    rows = [("trained on", f"source {training['source']} (fingerprint {training['fingerprint']}; "
             f"mix {training['mix']}, seed {training['seed']}, "
             + (f"{training['train_bytes']:,} bytes asked" if training["train_bytes"]
                else "all of it") + "); the corpus is measured, whole")]
    floor = count_floor_said(training)
    if floor:
        rows.append(("count floor", floor))
    for item in training["languages"]:
        said = (f"{item['bytes']:,} bytes, {item['documents']:,} documents of "
                f"{item['available_bytes']:,} bytes (asked {item['budget']:,}"
                + (": all it has" if item["short"] else "") + ")")
        if item["skipped_documents"] or item["notes"]:
            said += f"; skipped {item['skipped_documents']:,} unreadable documents"
        rows.append((f"sample {item['lang']}", said))
    return rows


def _provenance(run: RunRead, corpus: CorpusDetail, vocabs: list[VocabularyRead],
                prices: Path | None, full_paths: bool = False) -> list[tuple[str, str]]:
    """The run's provenance, row by row: the tokenizers' files and the corpus named without
    this machine's folders, unless `full_paths`."""
    def where(source: str | None) -> str:
        return str(source) if full_paths else without_local_paths(source or "")

    caveats = _caveats(vocabs)
    measured = (f"{len(run.measured_units)} held-out units (holdout {run.holdout:g}, seed {run.seed})"
                if run.holdout else f"all {len(run.measured_units)} units (training on a source)"
                if run.training else f"the training units themselves (all {len(run.measured_units)})"
                if any(v.kind.trained for v in vocabs) else f"all {len(run.measured_units)} units")
    def seconds(counted: bool) -> str:  # a production tokenizer's are counting, not training
        return ", ".join(f"{v.scope} {v.seconds:.1f} s" for v in vocabs if v.seconds is not None
                         and v.kind.production == counted)

    def counted_by(v: VocabularyRead) -> str:
        return (f"counted by the analyzer's engine, equal to {v.library}"
                if v.engine == "analyzer" else f"counted by {v.library}")

    production = [(f"tokenizer {tokenizer_label(v.scope)}", f"{v.size:,} tokens; {counted_by(v)}; "
                   f"{where(v.source)}" + (f". {caveats[v.scope]}" if v.scope in caveats else ""))
                  for v in vocabs if v.kind.production]
    production += [(f"tokenizer {v.scope}",
                    f"imported counts, measured elsewhere; {where(v.source)}")
                   for v in vocabs if v.kind.imported]
    trained = ("shared" + (", one per language" if run.per_language else "")
               + (", cross matrix" if run.cross else "")) if run.sizes else "none trained"
    patterns = {v.pretokenizer: v.pattern for v in vocabs if v.pretokenizer}
    trains = any(v.kind.trained for v in vocabs)
    rules = [(f"pre-tokenizer {name}", patterns.get(name) or "none: each text is one chunk")
             for name in run.pretokenizers if trains]  # the split of the trained vocabularies
    # A run that trained nothing has no training settings to state: its defaults made nothing.
    training = [
        ("sizes", ", ".join(f"{s:,}" for s in run.sizes) or "none (extensions only)"),
        ("vocabularies", trained),
        ("tie-break, min pair count", f"{run.tie_break}, {run.min_pair_count}"),
        ("unit weights", ", ".join(f"{lang} x{n}" for lang, n in run.weights.items())
         + " (the shared and parity-aware vocabularies; other languages x1)"
         if run.weights else "none: trained on the source's sample above" if run.training
         else "none: every unit once"),
        ("parity-aware", (f"yes; the first {run.global_merges:,} merges shared" if run.global_merges
                          else "yes") + (", judged on the held-out units" if run.holdout else
                                         ", judged on the training units")
         if run.parity else "no"),
    ] if trains else [("vocabularies", "none trained (production tokenizers only)")]
    return production + rules + _training_source(run) + [
        ("corpus", f"{corpus.name} ({where(corpus.source)}, {corpus.format})"),
        ("content hash", corpus.content_hash),
        ("texts", "NFC-normalised" if corpus.nfc else "as given"),
        ("languages", ", ".join(f"{language_name(lang)} ({lang})" for lang in run.languages)),
        ("pivot", f"{language_name(run.pivot)} ({run.pivot})"),
        ("measured on", measured),
        ("counted as", counting_convention(run)),
        ("special tokens", special_tokens_counted(run, vocabs)),
        *training,
        ("engine", run.engine_version),
        ("run", f"started {run.started}, finished {run.finished}, {run.seconds or 0:.1f} s"),
        *([("training time", seconds(counted=False))] if seconds(counted=False) else []),
        *([("counting time", seconds(counted=True))] if seconds(counted=True) else []),
        ("prices", f"{prices} (given)" if prices else
         "analyzer's price table (each entry dated and sourced; see What it costs)"),
    ]
