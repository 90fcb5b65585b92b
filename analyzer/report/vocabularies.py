"""The vocabulary view of a report: what the production tokenizers' vocabularies are written
in, how often their tokens split a word, and how much of each other they share."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from analyzer.external.vocabulary import script_word
from analyzer.metrics.frames import measured_kinds, tokenizer_label

from .colors import PALETTE
from .figures import RunView, label
from .language_filter import by_script, script_label

SHOWN_SCRIPTS = 10
"""Scripts drawn by name (the largest over all tokenizers); the rest drawn together."""


def named_short(name: str) -> str:
    """A tokenizer on an axis: with the first of its models (`tokenizer_label`'s short form)."""
    return label(tokenizer_label(name, short=True))


def scripts(rows: pd.DataFrame) -> go.Figure:
    """A stacked bar per tokenizer: the share of its vocabulary's tokens in each script."""
    totals = rows.groupby("script")["tokens"].sum().sort_values(ascending=False)
    named = list(totals.index[:SHOWN_SCRIPTS])
    tokenizers = list(dict.fromkeys(rows["tokenizer"]))
    figure = go.Figure()
    for index, script in enumerate([*named, "other scripts"]):
        part = rows[rows["script"] == script] if script in named else \
            rows[~rows["script"].isin(named)]
        share = part.groupby("tokenizer")["share"].sum()
        tokens = part.groupby("tokenizer")["tokens"].sum()
        figure.add_trace(go.Bar(
            y=[named_short(name) for name in tokenizers],
            x=[float(share.get(name, 0.0)) * 100 for name in tokenizers],
            customdata=[[int(tokens.get(name, 0))] for name in tokenizers], orientation="h",
            name=script_word(script) if script in named else script,
            marker_color=PALETTE[index % len(PALETTE)],
            hovertemplate=(f"%{{y}}<br>{script_word(script)}: %{{x:.1f}} % of its tokens "
                           "(%{customdata[0]:,})<extra></extra>")))
    figure.update_layout(barmode="stack", title="The scripts of each vocabulary's tokens",
                         xaxis=dict(title="share of the vocabulary's tokens", ticksuffix=" %"),
                         yaxis=dict(autorange="reversed"), height=max(320, 40 * len(tokenizers) + 200))
    return figure


def word_splits(view: RunView, frame: pd.DataFrame) -> go.Figure:
    """A heatmap: each language (rows, grouped by script) under each tokenizer (columns), the
    share of its words the tokenizer's tokens split."""
    rows = frame.dropna(subset=["word_split_pct"])
    vocabs, langs = rows["vocab"].tolist(), rows["lang"].tolist()
    order = by_script([lang for lang in view.languages if lang in set(langs)], view.pivot)
    names = list(dict.fromkeys(vocabs))
    cells = dict(zip(zip(vocabs, langs), rows["word_split_pct"].tolist()))  # a dict: a .get
    # of the frame per cell took seconds at 200 languages
    z = [[float(cells.get((name, lang), float("nan"))) for name in names] for lang in order]
    figure = go.Figure(go.Heatmap(
        z=z, x=[named_short(name) for name in names], y=[label(script_label(lang)) for lang in order],
        meta={"rows": order},
        colorscale="Oranges", zmin=0, zmax=100, texttemplate="%{z:.0f}%", textfont=dict(size=10),
        colorbar=dict(title="words split %"),
        hovertemplate="%{y}<br>%{x}: %{z:.1f} % of its words split<extra></extra>"))
    figure.update_layout(title="Words split into two or more tokens", xaxis=dict(side="top"),
                         yaxis=dict(autorange="reversed"), margin=dict(t=150, l=260),
                         height=max(420, 20 * len(order) + 240))
    return figure


def overlaps(rows: pd.DataFrame) -> go.Figure:
    """The Jaccard index of every two tokenizers' vocabularies, as a symmetric matrix."""
    names = list(dict.fromkeys([*rows["tokenizer"], *rows["other"]]))
    matrix = pd.DataFrame(1.0, index=names, columns=names)
    for row in rows.itertuples():
        matrix.loc[row.tokenizer, row.other] = matrix.loc[row.other, row.tokenizer] = row.jaccard
    figure = go.Figure(go.Heatmap(
        z=matrix.values, x=[named_short(name) for name in names],
        y=[named_short(name) for name in names], colorscale="Blues", zmin=0, zmax=1,
        texttemplate="%{z:.2f}", colorbar=dict(title="Jaccard"),
        hovertemplate="%{y} and %{x}: %{z:.3f} of their tokens shared<extra></extra>"))
    figure.update_layout(title="How much two vocabularies share (Jaccard index of their tokens)",
                         yaxis=dict(autorange="reversed"), height=max(360, 40 * len(names) + 200))
    return figure


def sections(view: RunView, script_rows: pd.DataFrame, overlap_rows: pd.DataFrame,
             frame: pd.DataFrame) -> list[tuple[str, str, object]]:
    if script_rows.empty:
        return []
    charts: list[tuple[str, str, object]] = [(
        "Production vocabularies: their scripts",
        "Each production tokenizer's ordinary tokens by the script of their letters (no "
        "letter: spaces, digits and punctuation; part of a character: bytes that are not a "
        "whole character). A language whose script has few tokens pays for it in tokens.",
        scripts(script_rows))]
    measured = frame[frame["kind"].isin(measured_kinds())]
    if measured["word_split_pct"].notna().any():
        charts.append((
            "Words split by each tokenizer",
            "The share of a language's words (runs of characters between spaces) that a token "
            "boundary falls inside (tokka-bench's continued words); languages written without "
            "spaces have none.", word_splits(view, measured)))
    if not overlap_rows.empty:
        charts.append((
            "Vocabulary overlap",
            "The tokens two tokenizers both have over those either has (the Jaccard index, as "
            "Arnett et al. 2024 compare vocabularies), tokens compared as the bytes they stand "
            "for.", overlaps(overlap_rows)))
    return charts
