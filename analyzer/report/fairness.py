"""Figures of the fairness lab: the parity-aware vocabulary beside the shared one, who got the
vocabulary, the equal-cost sizes, how languages' token distributions diverge, and how much of
the vocabulary each language uses."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analyzer.corpus import language_name
from analyzer.identity import PARITY_SCOPE, SHARED_SCOPE, Role, VocabKind
from analyzer.metrics import configuration_name

from .figures import OTHER_COLOR, TOKENS_COLOR, RunView, _sized_bars, label
from .language_filter import by_script, script_label

PARITY_COLOR = Role.PARITY.kind.about.color


def parity_by_language(view: RunView) -> go.Figure:
    """Each language's overhead under the shared vocabulary and under the parity-aware one,
    with a size slider."""

    def traces(size: int):
        shared = view.rows(SHARED_SCOPE, size).set_index("lang")
        parity = view.rows(PARITY_SCOPE, size).set_index("lang")
        order = sorted(shared.index, key=lambda lang: -shared.loc[lang, "overhead"])
        names = [view.name(lang) for lang in order]
        return [go.Bar(y=names, x=shared.loc[order, "overhead"] * 100, orientation="h",
                       name="shared vocabulary", marker_color=TOKENS_COLOR, meta={"langs": order},
                       hovertemplate="%{y}<br>shared: %{x:+.1f} %<extra></extra>"),
                go.Bar(y=names, x=parity.loc[order, "overhead"] * 100, orientation="h",
                       name="parity-aware vocabulary", marker_color=PARITY_COLOR,
                       meta={"langs": order},
                       hovertemplate="%{y}<br>parity-aware: %{x:+.1f} %<extra></extra>")], order

    def title(size: int) -> str:
        return (f"Overhead vs {label(language_name(view.pivot))} at size {size:,}: the shared "
                "vocabulary serves the most frequent pairs, the parity-aware one the language "
                "that compresses worst")

    figure = _sized_bars(view, title, traces)
    figure.update_xaxes(title=f"overhead vs {label(language_name(view.pivot))} (%)", ticksuffix=" %")
    return figure


def price_of_parity(summaries: pd.DataFrame, pretokenizer: str, sizes: list[int]) -> go.Figure:
    """The Gini of premiums across languages, shared vs parity-aware, against size (95 %
    bootstrap intervals), and what parity costs in total tokens over all languages."""
    rows = summaries[summaries["pretokenizer"] == pretokenizer]
    figure = make_subplots(rows=1, cols=2, subplot_titles=(
        "Gini of premiums across languages (0: every language pays the same)",
        "Total tokens, all languages: parity-aware vs shared"))
    for kind, color in ((Role.BASELINE.kind, TOKENS_COLOR), (Role.PARITY.kind, PARITY_COLOR)):
        part = rows[rows["kind"] == kind].sort_values("size")
        figure.add_trace(go.Scatter(
            x=part["size"], y=part["gini"], mode="lines+markers", name=f"{kind} vocabulary",
            line=dict(color=color),
            error_y=dict(type="data", symmetric=False, array=part["gini_ci_high"] - part["gini"],
                         arrayminus=part["gini"] - part["gini_ci_low"]),
            hovertemplate="size %{x:,}<br>Gini %{y:.3f}<extra></extra>"), row=1, col=1)
    parity = rows[rows["kind"] == Role.PARITY.kind].sort_values("size")
    figure.add_trace(go.Bar(
        x=[f"{size:,}" for size in parity["size"]], y=parity["vs_shared"] * 100,
        marker_color=PARITY_COLOR, showlegend=False,
        error_y=dict(type="data", symmetric=False,
                     array=(parity["vs_shared_ci_high"] - parity["vs_shared"]) * 100,
                     arrayminus=(parity["vs_shared"] - parity["vs_shared_ci_low"]) * 100),
        hovertemplate="size %{x}<br>%{y:+.2f} % tokens vs shared<extra></extra>"), row=1, col=2)
    largest = parity[parity["size"] == max(sizes)]
    shared = rows[(rows["kind"] == Role.BASELINE.kind) & (rows["size"] == max(sizes))]
    title = "What parity costs"
    if not largest.empty and not shared.empty:
        title = (f"At size {max(sizes):,}, parity-aware training takes the Gini of premiums from "
                 f"{shared['gini'].iloc[0]:.3f} to {largest['gini'].iloc[0]:.3f} for "
                 f"{largest['vs_shared'].iloc[0]:+.1%} tokens over all languages")
    figure.update_xaxes(type="log", tickvals=sizes, ticktext=[f"{s:,}" for s in sizes],
                        title="vocabulary size", row=1, col=1)
    figure.update_xaxes(title="vocabulary size", row=1, col=2)
    figure.update_yaxes(title="Gini", rangemode="tozero", row=1, col=1)
    figure.update_yaxes(title="extra tokens vs shared (%)", ticksuffix=" %", row=1, col=2)
    figure.update_layout(title=title, height=460, margin=dict(t=120),
                         legend=dict(orientation="h", yanchor="bottom", y=-0.3, x=0))
    return figure


def who_got_the_vocabulary(view: RunView, shares: pd.DataFrame) -> go.Figure:
    """Per language: its share of the merges beside its share of the training bytes, for the
    shared vocabulary (and the parity-aware one, in a menu)."""
    vocabs = [v for v in (SHARED_SCOPE, PARITY_SCOPE) if (shares["vocab"] == v).any()]
    figure = go.Figure()
    groups = []
    for vocab in vocabs:
        part = shares[shares["vocab"] == vocab].set_index("lang")
        order = sorted(part.index, key=lambda lang: -part.loc[lang, "merges_share"])
        names = [view.name(lang) for lang in order]
        start = len(figure.data)
        figure.add_trace(go.Bar(
            y=names, x=part.loc[order, "merges_share"] * 100, orientation="h",
            name="share of the merges", marker_color=TOKENS_COLOR if vocab == SHARED_SCOPE
            else PARITY_COLOR, meta={"langs": order}, visible=vocab == vocabs[0],
            customdata=np.column_stack([part.loc[order, "occurrences_share"] * 100,
                                        part.loc[order, "first_merge"].fillna(-1)]),
            hovertemplate=("%{y}<br>%{x:.1f} % of the merges (it contributed most of their "
                           "occurrences)<br>%{customdata[0]:.1f} % of all occurrences replaced"
                           "<br>first merge it uses: %{customdata[1]:,}<extra></extra>")))
        figure.add_trace(go.Bar(
            y=names, x=part.loc[order, "bytes_share"] * 100, orientation="h",
            name="share of the training bytes", marker_color=OTHER_COLOR, meta={"langs": order},
            visible=vocab == vocabs[0],
            hovertemplate="%{y}<br>%{x:.1f} % of the training bytes<extra></extra>"))
        groups.append((vocab, range(start, len(figure.data)), names))
    buttons = [dict(label=f"{vocab} vocabulary", method="update",
                    args=[{"visible": [i in group for i in range(len(figure.data))]},
                          {"yaxis.categoryarray": list(reversed(names))}])
               for vocab, group, names in groups]
    first_names = groups[0][2]
    figure.update_layout(
        title="Who got the vocabulary: each language's share of the merges beside its share of "
              "the training text",
        barmode="group", xaxis=dict(title="share (%)", ticksuffix=" %"),
        yaxis=dict(categoryorder="array", categoryarray=list(reversed(first_names))),
        updatemenus=[dict(buttons=buttons, x=0, y=1.1, xanchor="left", yanchor="bottom")]
        if len(buttons) > 1 else [],
        legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0.3), margin=dict(t=130),
        height=max(420, 26 * len(first_names) + 200))
    return figure


def equal_cost(view: RunView, found: list[dict], pretokenizer: str) -> go.Figure:
    """For each language, the vocabulary size at which its text costs no more tokens than the
    pivot's at the reference size: under its own vocabulary, the shared one and the
    parity-aware one. A language that never gets there is drawn past the last size."""
    rows = [f for f in found if f["pretokenizer"] == pretokenizer]
    reference = rows[0]["reference_size"] if rows else max(view.sizes)
    kinds = {"own": "its own vocabulary", SHARED_SCOPE: "the shared vocabulary",
             PARITY_SCOPE: "the parity-aware vocabulary"}
    by_kind: dict[str, dict[str, int | None]] = {kind: {} for kind in kinds}
    for f in rows:
        kind = f["vocab"] if f["vocab"] in (SHARED_SCOPE, PARITY_SCOPE) else "own"
        by_kind[kind][f["lang"]] = f["size"]
    known = [size for sizes in by_kind.values() for size in sizes.values() if size]
    never = 2 ** math.ceil(math.log2(max(known + [reference]) * 1.5))
    main = by_kind["own"] if by_kind["own"] else by_kind[SHARED_SCOPE]
    order = sorted(main, key=lambda lang: -(main[lang] or never))
    names = [view.name(lang) for lang in order]
    figure = go.Figure()
    # Sizes often coincide: the markers shrink in turn, so that each stays visible.
    styles = {"own": ("circle-open", TOKENS_COLOR, 15), SHARED_SCOPE: ("diamond", "#2f855a", 10),
              PARITY_SCOPE: ("square", PARITY_COLOR, 6)}
    for kind, title in kinds.items():
        sizes = by_kind[kind]
        if not sizes:
            continue
        x = [sizes.get(lang) or never for lang in order]
        symbol, color, marker_size = styles[kind]
        figure.add_trace(go.Scatter(
            x=x, y=names, mode="markers", name=title, meta={"langs": order},
            marker=dict(symbol=symbol, size=marker_size, color=color, line=dict(width=2)),
            text=[f"{s:,}" if s else "never, within the trained merges"
                  for s in (sizes.get(lang) for lang in order)],
            hovertemplate=f"%{{y}}<br>{title}: %{{text}}<extra></extra>"))
    pivot = label(language_name(view.pivot))
    figure.add_vline(x=reference, line=dict(color="black", dash="dot"))
    figure.update_layout(
        title=(f"Equal-cost size: the vocabulary each language needs to take no more tokens than "
               f"{pivot} at {reference:,}"),
        xaxis=dict(type="log", title=f"vocabulary size (the dotted line: {reference:,}; far "
                   f"right, at {never:,}: never, within the trained merges)"),
        yaxis=dict(categoryorder="array", categoryarray=list(reversed(names))),
        legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0), margin=dict(t=110),
        height=max(420, 24 * len(order) + 200))
    return figure


def divergence(view: RunView, matrices: list[dict], vocab: str, pretokenizer: str) -> go.Figure:
    """Jensen-Shannon divergence between every two languages' token distributions under one
    vocabulary (the run's `divergence` section), with a size slider; languages grouped by
    script."""
    order = by_script(view.languages, view.pivot)
    names = [label(script_label(lang)) for lang in order]
    by_size = {row["size"]: pd.DataFrame(row["matrix"], index=row["languages"],
                                         columns=row["languages"])
               for row in matrices if row["vocab"] == vocab and row["pretokenizer"] == pretokenizer}
    figure = go.Figure()
    for size in view.sizes:
        matrix = by_size.get(size, pd.DataFrame()).reindex(index=order, columns=order)
        figure.add_trace(go.Heatmap(
            z=matrix.to_numpy(), x=names, y=names, zmin=0, zmax=1, colorscale="Viridis",
            visible=size == view.largest, meta={"rows": order, "cols": order},
            colorbar=dict(title="JSD (bits)"),
            hovertemplate="%{y}<br>%{x}<br>divergence %{z:.3f}<extra></extra>"))
    steps = [dict(label=f"{size:,}", method="update",
                  args=[{"visible": [s == size for s in view.sizes]}]) for size in view.sizes]
    figure.update_layout(
        title=(f"How differently languages use the {label(vocab)} vocabulary: the Jensen-Shannon "
               "divergence of their token distributions"),
        xaxis=dict(tickangle=-45), yaxis=dict(autorange="reversed"),
        sliders=[dict(active=len(view.sizes) - 1, steps=steps, pad=dict(t=160),
                      currentvalue=dict(prefix="vocabulary size: "))] if len(view.sizes) > 1 else [],
        height=max(520, 22 * len(order) + 300), margin=dict(l=220, b=200))
    return figure


def allocation(view: RunView, vocab: str = SHARED_SCOPE) -> go.Figure:
    """How much of the vocabulary each language uses, and how evenly: utilisation and Rényi
    efficiency per language at the largest size."""
    rows = view.rows(vocab, view.largest).set_index("lang")
    order = sorted(rows.index, key=lambda lang: rows.loc[lang, "utilisation"])
    names = [view.name(lang) for lang in order]
    figure = make_subplots(rows=1, cols=2, shared_yaxes=True, subplot_titles=(
        "utilisation: distinct tokens used / vocabulary size",
        "Rényi efficiency (alpha 2.5): how evenly its tokens are used"))
    figure.add_trace(go.Bar(
        y=names, x=rows.loc[order, "utilisation"] * 100, orientation="h", showlegend=False,
        marker_color=TOKENS_COLOR, meta={"langs": order},
        customdata=rows.loc[order, "mean_rank"],
        hovertemplate="%{y}<br>uses %{x:.1f} % of the vocabulary<br>mean rank of its tokens "
                      "%{customdata:,.0f}<extra></extra>"), row=1, col=1)
    figure.add_trace(go.Bar(
        y=names, x=rows.loc[order, "renyi_efficiency"], orientation="h", showlegend=False,
        marker_color=OTHER_COLOR, meta={"langs": order},
        hovertemplate="%{y}<br>Rényi efficiency %{x:.3f}<extra></extra>"), row=1, col=2)
    figure.update_xaxes(ticksuffix=" %", row=1, col=1)
    figure.update_layout(
        title=(f"How much of the {label(vocab)} vocabulary ({view.largest:,}) each language "
               "uses: languages that use little of it pay in tokens"),
        height=max(420, 24 * len(order) + 200), margin=dict(t=120))
    return figure


def frontier(summaries: pd.DataFrame) -> go.Figure:
    """Every configuration's cost (tokens over all languages, against the reference) against
    its Gini, with 95 % intervals both ways; the frontier (no configuration both cheaper and
    fairer) drawn as a line; buttons show one size at a time."""
    rows = summaries.dropna(subset=["cost", "gini"])
    figure = go.Figure()
    sizes = sorted({int(s) for s in rows["size"]})
    groups: list[int] = []  # each trace's size (0: the frontier line, always shown)
    for (kind, size), part in rows.groupby(["kind", "size"], sort=True):
        names = [configuration_name(row) for _, row in part.iterrows()]
        figure.add_trace(go.Scatter(
            x=part["gini"], y=(part["cost"] - 1) * 100, mode="markers", name=f"{kind} {int(size):,}",
            legendgroup=str(kind), marker=dict(
                color=VocabKind(kind).about.color, size=11,
                symbol=["star" if on else "circle" for on in part["frontier"]],
                line=dict(width=1, color="#1a202c")),
            error_x=dict(type="data", array=part["gini_ci_high"] - part["gini"],
                         arrayminus=part["gini"] - part["gini_ci_low"], thickness=1),
            error_y=dict(type="data", array=(part["cost_ci_high"] - part["cost"]) * 100,
                         arrayminus=(part["cost"] - part["cost_ci_low"]) * 100, thickness=1),
            customdata=[[name, worst, premium, "on the frontier" if on else "dominated"]
                        for name, worst, premium, on in zip(names, part["worst_lang"],
                                                            part["worst_premium"], part["frontier"])],
            hovertemplate=("<b>%{customdata[0]}</b><br>cost %{y:+.1f} %, Gini %{x:.3f}<br>"
                           "charges %{customdata[1]} most: %{customdata[2]:.2f}x<br>"
                           "%{customdata[3]}<extra></extra>")))
        groups.append(int(size))
    line = rows[rows["frontier"]].sort_values("gini")
    figure.add_trace(go.Scatter(
        x=line["gini"], y=(line["cost"] - 1) * 100, mode="lines", name="frontier",
        line=dict(color="#1a202c", dash="dash"), hoverinfo="skip"))
    groups.append(0)
    buttons = [dict(label="every size", method="update",
                    args=[{"visible": [True] * len(groups)}])]
    buttons += [dict(label=f"{size:,}", method="update",
                     args=[{"visible": [group in (0, size) for group in groups]}])
                for size in sizes]
    figure.update_layout(
        title="Cost against fairness: every configuration of the run (stars: on the frontier)",
        xaxis=dict(title="Gini of the premiums (0: every language pays the same)"),
        yaxis=dict(title="tokens over all languages vs the reference (%)", ticksuffix=" %"),
        updatemenus=[dict(buttons=buttons, direction="down", x=1.0, xanchor="right", y=1.12,
                          yanchor="bottom", showactive=True)] if len(sizes) > 1 else [],
        height=560, hovermode="closest")
    return figure
