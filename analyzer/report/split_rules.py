"""Figures of a run trained under several pre-tokenizers (split rules): the headline with a
selector, each language's overhead under each rule, and how many chunks each rule cuts each
language into."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analyzer.bpe.pretokenize import NONE
from analyzer.corpus import language_name
from analyzer.identity import Role
from analyzer.metrics import tokenizer_label

from .figures import (
    RunView,
    column_axis,
    headline,
    headline_finding,
    label,
    overhead_heatmaps,
)


def headline_with_selector(view: RunView) -> go.Figure:
    """The headline chart for each pre-tokenizer, one shown at a time, chosen in a menu; the
    production tokenizers stay as reference marks under every rule."""
    figure = headline(view.split(view.pretokenizers[0]))
    n_languages = sum(1 for trace in figure.data if "production tokenizer" not in (trace.name or ""))
    groups = [list(range(n_languages))]
    for pretokenizer in view.pretokenizers[1:]:
        start = len(figure.data)
        for trace in headline(view.split(pretokenizer)).data[:n_languages]:
            trace.visible = False
            figure.add_trace(trace)
        groups.append(list(range(start, start + n_languages)))
    production = [i for i, trace in enumerate(figure.data)
                  if "production tokenizer" in (trace.name or "")]
    buttons = []
    for pretokenizer, group in zip(view.pretokenizers, groups):
        visible = [i in group or i in production for i in range(len(figure.data))]
        buttons.append(dict(label=f"pre-tokenizer: {label(pretokenizer)}", method="update",
                            args=[{"visible": visible},
                                  {"title.text": headline_finding(view.split(pretokenizer))}]))
    figure.update_layout(updatemenus=[dict(buttons=buttons, direction="down", x=0, y=1.12,
                                           xanchor="left", yanchor="bottom", showactive=True)],
                         margin=dict(t=130))
    return figure


def overhead_by_rule(view: RunView) -> go.Figure:
    """Each language's overhead vs the pivot under each pre-tokenizer's shared vocabulary (a
    heatmap, language x rule, with a size slider); production tokenizers as the last columns."""
    full = view.full
    shared = full[full["kind"] == Role.BASELINE.kind]
    first = shared[(shared["pretokenizer"] == view.pretokenizers[0]) & (shared["size"] == view.largest)]
    order = list(first.set_index("lang")["overhead"].sort_values(ascending=False).index)
    columns = [f"{label(p)}" for p in view.pretokenizers] + \
        [label(tokenizer_label(name, size, short=True)) for name, size in view.tokenizers]
    figure = go.Figure()
    traces_per_size = []
    for size in view.sizes:
        trained = [[_overhead(shared[(shared["pretokenizer"] == pretokenizer)
                                     & (shared["size"] == size)], lang) for lang in order]
                   for pretokenizer in view.pretokenizers]
        production = [[_overhead(view.rows(name, tokenizer_size), lang) for lang in order]
                      for name, tokenizer_size in view.tokenizers]
        traces = overhead_heatmaps(columns[:len(view.pretokenizers)], trained,
                                   columns[len(view.pretokenizers):], production,
                                   [view.name(lang) for lang in order], order,
                                   visible=size == view.largest)
        traces_per_size.append(len(traces))
        figure.add_traces(traces)
    steps = [dict(label=f"{size:,}", method="update",
                  args=[{"visible": [s == size for s, n in zip(view.sizes, traces_per_size)
                                     for _ in range(n)]},
                        {"title.text": _rule_title(view, size)}]) for size in view.sizes]
    figure.update_layout(
        title=_rule_title(view, view.largest),
        xaxis=dict(title="split rule", side="top", **column_axis(columns)),
        yaxis=dict(autorange="reversed"),
        sliders=[dict(active=len(view.sizes) - 1, steps=steps, currentvalue=dict(
            prefix="vocabulary size: "))] if len(view.sizes) > 1 else [],
        height=max(460, 22 * len(order) + 220), margin=dict(t=140))
    return figure


def _overhead(rows: pd.DataFrame, lang: str) -> float:
    """A language's overhead (%) in these rows, NaN where it has none."""
    cell = rows[rows["lang"] == lang]["overhead"]
    return float(cell.iloc[0]) * 100 if len(cell) else np.nan


def _rule_title(view: RunView, size: int) -> str:
    return (f"Overhead vs {label(language_name(view.pivot))} at size {size:,} under each split "
            "rule: the same vocabulary size, trained and counted with each pre-tokenizer")


def chunks_per_unit(view: RunView) -> go.Figure:
    """How many chunks each pre-tokenizer cuts each language into, relative to the pivot: the
    split rule's share of the premium, beside the script's (bytes) and the vocabulary's."""
    full = view.full
    figure = go.Figure()
    rules = [p for p in view.pretokenizers if p != NONE]
    order: list[str] = []
    for pretokenizer in rules:
        rows = full[(full["kind"] == Role.BASELINE.kind) & (full["pretokenizer"] == pretokenizer)
                    & (full["size"] == view.largest)].set_index("lang")
        order = order or list(rows["chunk_premium"].sort_values(ascending=False).index)
        figure.add_trace(go.Scatter(  # a dot per rule on a language's row: short at 200 languages
            y=[view.name(lang) for lang in order], x=(rows.loc[order, "chunk_premium"] - 1) * 100,
            mode="markers", marker=dict(size=9, opacity=0.85),
            orientation="h", name=label(pretokenizer), meta={"langs": order},
            customdata=np.column_stack([rows.loc[order, "chunks"], rows.loc[order, "premium"]]),
            hovertemplate=(f"%{{y}}<br>{label(pretokenizer)}: %{{customdata[0]:,}} chunks "
                           "(%{x:+.1f} % vs the pivot)<br>token premium %{customdata[1]:.2f}"
                           "<extra></extra>")))
    figure.update_layout(
        title=(f"Chunks per text vs {label(language_name(view.pivot))}: scripts written without "
               "spaces become few long chunks, others many short ones"),
        hovermode="closest", xaxis=dict(title="extra chunks vs the pivot (%)", ticksuffix=" %"),
        yaxis=dict(categoryorder="array", categoryarray=[view.name(l) for l in reversed(order)]),
        legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0), margin=dict(t=110),
        height=max(420, 18 * len(order) + 200))
    return figure
