"""The Plotly figures of a run's page. Each takes the run as the figures see it (`RunView`:
the metrics frame, one row per vocabulary, size and language, with the run's pivot, sizes,
languages and colours) and returns a figure whose title states the finding in words.

Every string that comes from a corpus or a vocabulary is escaped with `label` before it
reaches Plotly, whose text fields accept a subset of HTML.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analyzer.bpe.pretokenize import NONE
from analyzer.corpus import language_name
from analyzer.identity import SHARED_SCOPE, Role
from analyzer.metrics import (
    PREMIUM_ESTIMATOR,
    UNIT_ESTIMATOR,
    for_pretokenizer,
    premium_text,
    tokenizer_label,
    trained_language,
)

from .colors import PALETTE
from .language_filter import MANY_LANGUAGES, by_script, script_label

TOKENS_COLOR = "#2b6cb0"
"""Bars of tokens (or token overhead): one colour for the series, as its legend swatch shows."""
OTHER_COLOR = "#bbbbbb"
"""The bar beside it (bytes, or the language's own vocabulary)."""


@dataclass
class RunView:
    """What every figure needs: the frame and the run around it, seen under one pre-tokenizer
    (its trained vocabularies, and every production tokenizer); `split` gives the view under
    another, and `full` keeps every row."""

    full: pd.DataFrame
    pivot: str
    sizes: list[int]
    languages: list[str]
    colors: dict[str, str]
    tokenizers: list[tuple[str, int]]
    """Production tokenizers measured in the run: (name, real vocabulary size)."""
    primary: tuple[str, int]
    """The vocabulary and size the page's headline numbers are about."""
    pretokenizers: list[str] = field(default_factory=lambda: [NONE])
    """The run's pre-tokenizers; the view is under the first unless `split` chose another."""
    pretokenizer: str = NONE

    @cached_property
    def frame(self) -> pd.DataFrame:
        return for_pretokenizer(self.full, self.pretokenizer)

    def split(self, pretokenizer: str) -> RunView:
        """The same run seen under another pre-tokenizer."""
        return replace(self, pretokenizer=pretokenizer)

    def name(self, lang: str) -> str:
        return label(f"{language_name(lang)} ({lang})")

    @cached_property
    def shared(self) -> pd.DataFrame:
        return self.frame[self.frame["kind"] == Role.BASELINE.kind]

    def shared_by_size(self, lang: str) -> pd.DataFrame:
        """A language's rows of the shared vocabulary, smallest size first."""
        return self._shared_by_lang.get(lang, self.shared.iloc[:0])

    @cached_property
    def _shared_by_lang(self) -> dict[str, pd.DataFrame]:
        # grouped once: a filter of the frame per language took seconds at 200 languages
        return {lang: rows.sort_values("size")
                for lang, rows in self.shared.groupby("lang", sort=False)}

    @property
    def largest(self) -> int:
        return max(self.sizes)

    def rows(self, vocab: str, size: int) -> pd.DataFrame:
        return self.frame[(self.frame["vocab"] == vocab) & (self.frame["size"] == size)]

    def by_overhead(self, size: int, vocab: str = SHARED_SCOPE) -> list[str]:
        """Languages, highest overhead first, under `vocab` at `size`."""
        rows = self.rows(vocab, size).set_index("lang")["overhead"]
        return sorted(rows.index, key=lambda lang: -rows[lang])


def label(text: str) -> str:
    """Text made inert for Plotly's HTML-like labels (and for HTML)."""
    return html.escape(str(text), quote=True)


def percent(value: float) -> str:
    return f"{value:+.0%}"


def size_axis(sizes: list[int]) -> dict:
    return dict(type="log", tickvals=sizes, ticktext=[f"{s:,}" for s in sizes],
                title="vocabulary size (256 bytes + merges, log scale)")


def headline(view: RunView) -> go.Figure:
    """Overhead vs the pivot against vocabulary size: one line per language, or, with many
    languages, a heatmap (language x size) grouped by script."""
    if len(view.languages) > MANY_LANGUAGES:
        return headline_heatmap(view)
    order = view.by_overhead(view.largest)
    figure = go.Figure()
    for lang in order:
        rows = view.shared_by_size(lang)
        figure.add_trace(go.Scatter(  # arrays, not Series: Plotly reads them 3x as fast
            x=rows["size"].to_numpy(), y=rows["overhead"].to_numpy() * 100,
            mode="lines+markers", name=view.name(lang),
            meta={"lang": lang},
            line=dict(color=view.colors[lang], width=3 if lang == view.pivot else 2,
                      dash="dot" if lang == view.pivot else "solid"),
            customdata=np.column_stack([rows["tokens"], rows["bytes_per_token"]]),
            hovertemplate=(f"<b>{view.name(lang)}</b><br>size %{{x:,}}<br>tokens %{{customdata[0]:,}}"
                           "<br>overhead %{y:+.1f} %<br>bytes per token %{customdata[1]:.2f}"
                           "<extra></extra>"),
        ))
    # Production tokenizers are not drawn on the trained sizes' axis (their sizes, 50,257 or
    # 200,019, would squeeze the trained ones into a corner): the answer table has them.
    figure.update_layout(
        title=headline_finding(view), xaxis=size_axis(sorted(view.sizes)),
        yaxis=dict(title=f"extra tokens vs {label(language_name(view.pivot))} (%)", ticksuffix=" %"),
        legend=dict(title="highest overhead first"), hovermode="closest",
        height=max(480, 22 * len(order)),
    )
    return figure


DESIGNED_PLOT_HEIGHT = 300
"""The plot height (pixels) the figures' legends and menus above or below the plot were placed
for, in paper units: `pin_around_plot` keeps them that many pixels away at any height."""


TALLEST_CHART = 2 * 900
"""A chart taller than this (two screens at 1366x900, pixels) scrolls in its own box: the page
around it stays short at 200 languages, and the chart keeps a readable row per language."""


def pin_around_plot(figure: go.Figure) -> go.Figure:
    """The title at the top of the figure, and the legend and menus placed just above (or
    below) the plot kept at the same distance in pixels whatever the figure's height.

    Plotly places them in paper units, fractions of the plot's height: a legend at y = 1.01
    sits 3 px above a 300 px plot but 50 px above a 5,000 px one (a page of 200 languages),
    right across the title. Figures are written for a plot of about 300 px; here each offset
    beyond the plot is turned into the same number of pixels at the figure's real height.
    """
    layout = figure.layout
    margin = layout.margin
    height = layout.height or 450
    plot = max(1.0, height - (margin.t if margin.t is not None else 100)
               - (margin.b if margin.b is not None else 80))

    def pinned(y):
        if y is None or 0 <= y <= 1:
            return y
        edge = 1 if y > 1 else 0
        return edge + (y - edge) * DESIGNED_PLOT_HEIGHT / plot

    if layout.legend.y is not None:
        layout.legend.y = pinned(layout.legend.y)
    for menu in layout.updatemenus:
        menu.y = pinned(menu.y)
    if layout.title.text:
        layout.title.update(y=1, yref="container", yanchor="top", pad=dict(t=14))
    return figure


def headline_heatmap(view: RunView) -> go.Figure:
    """The headline for many languages: overhead (colour and number) per language (rows,
    grouped by script, the script named) and vocabulary size (columns), production tokenizers
    as the last columns, on a colour scale of their own."""
    largest = view.shared[view.shared["size"] == view.largest].set_index("lang")["overhead"]
    order = by_script(view.languages, view.pivot, key=lambda lang: largest.get(lang, 0.0))
    frame = view.frame  # each cell's overhead in a dict: a .loc per cell took seconds
    cells = dict(zip(zip(frame["vocab"].tolist(), frame["size"].tolist(),
                         frame["lang"].tolist()), frame["overhead"].tolist()))

    def column(vocab: str, size: int) -> list[float]:
        return [float(cells[(vocab, size, lang)]) * 100 if (vocab, size, lang) in cells
                else np.nan for lang in order]

    trained = [column(SHARED_SCOPE, size) for size in view.sizes]
    production = [column(name, size) for name, size in view.tokenizers]
    trained_x = [f"{size:,}" for size in view.sizes]
    production_x = [label(tokenizer_label(name, size, short=True))  # a column's tick: short
                    for name, size in view.tokenizers]
    figure = go.Figure(overhead_heatmaps(trained_x, trained, production_x, production,
                                         [label(script_label(lang)) for lang in order], order))
    figure.update_layout(
        title=headline_finding(view),
        xaxis=dict(title="shared vocabulary size; production tokenizers last", side="top",
                   **column_axis(trained_x + production_x)),
        yaxis=dict(autorange="reversed"), margin=dict(t=150, l=260),
        height=max(480, 20 * len(order) + 240))
    return figure


def column_axis(columns: list[str]) -> dict:
    """The x axis of `overhead_heatmaps`: its column positions named."""
    return dict(tickvals=list(range(len(columns))), ticktext=columns, range=[-0.5, len(columns) - 0.5])


def overhead_heatmaps(trained_x: list[str], trained: list[list[float]], production_x: list[str],
                      production: list[list[float]], y: list[str], rows: list[str],
                      visible: bool = True) -> list[go.Heatmap]:
    """Overhead (%) heatmaps of trained vocabularies and of production tokenizers side by side
    (columns given as lists of values, one per row), each on its own colour scale, so that a
    production tokenizer's +1,000 % does not wash out the differences between trained columns
    (or the reverse): trained in blue-red, production in purple-orange, both centred on 0 and
    spanning their own largest overhead. Every cell carries its number.

    The columns are placed at positions 0, 1, 2, ... (`column_axis` names them): two heatmaps
    on one axis of categories draw each other's cell texts."""
    traces = []
    for first, x, columns, scale, name, at in (
            (0, trained_x, trained, "RdBu_r", "trained", 0.78),
            (len(trained_x), production_x, production, "PuOr_r", "production", 0.25)):
        if not x:
            continue
        z = np.array(columns, dtype=float).T  # rows x columns
        finite = np.abs(z[np.isfinite(z)])
        span = float(finite.max()) if finite.size and finite.max() > 0 else 100.0
        traces.append(go.Heatmap(
            z=z, x=list(range(first, first + len(x))), y=y, colorscale=scale, zmin=-span,
            zmax=span, meta={"rows": rows}, customdata=[x] * len(y),
            name="production tokenizers" if name == "production" else "trained vocabularies",
            visible=visible, texttemplate="%{z:+.0f}%", textfont=dict(size=10),
            colorbar=dict(title=f"{name}: overhead %", len=0.45, y=at, yanchor="middle"),
            hovertemplate="%{y}<br>%{customdata}<br>overhead %{z:+.1f} %<extra></extra>"))
    if len(traces) == 1:  # one kind of column: one colour bar, full height
        traces[0].colorbar.update(len=1.0, y=0.5)
    return traces


def headline_finding(view: RunView) -> str:
    vocab, size = view.primary
    rows = view.rows(vocab, size)
    at = rows[rows["lang"] != view.pivot]
    if at.empty:
        return f"Tokens per language at size {size:,}"
    worst = at.loc[at["overhead"].idxmax()]
    best = at.loc[at["overhead"].idxmin()]
    pivot = label(language_name(view.pivot))
    where = (f"At vocabulary size {size:,}" if vocab == SHARED_SCOPE
             else f"Under {label(vocab)} ({size:,} tokens)")
    if vocab == SHARED_SCOPE and view.pretokenizer != NONE:
        where += f", pre-tokenizer {label(view.pretokenizer)}"
    return (f"{where}, {label(language_name(worst['lang']))} pays "
            f"{percent(worst['overhead'])} tokens vs {pivot} for the same text; "
            f"{label(language_name(best['lang']))} {percent(best['overhead'])}")


def tokenizer_comparison(view: RunView) -> go.Figure:
    """Each production tokenizer's overhead per language: a dot per tokenizer on one row per
    language (grouped bars would make the chart as many times taller as there are tokenizers)."""
    first, first_size = view.tokenizers[0]
    order = view.by_overhead(first_size, first)
    names = [view.name(lang) for lang in order]
    figure = go.Figure()
    for name, size in view.tokenizers:
        rows = view.rows(name, size).set_index("lang").loc[order]
        figure.add_trace(go.Scatter(
            y=names, x=rows["premium"], mode="markers", orientation="h",
            name=label(tokenizer_label(name, size)), marker=dict(size=9, opacity=0.85),
            meta={"langs": order}, customdata=np.column_stack([rows["tokens"]]),
            hovertemplate=(f"%{{y}}<br>{label(tokenizer_label(name, size))}: "
                           "%{customdata[0]:,} tokens, "
                           "%{x:.2f}x<extra></extra>")))
    parts = []
    for name, size in view.tokenizers:
        rows = view.rows(name, size)
        rows = rows[rows["lang"] != view.pivot]
        if not rows.empty:
            worst = rows.loc[rows["overhead"].idxmax()]
            parts.append(f"{label(tokenizer_label(name, size, short=True))} charges "
                         f"{label(language_name(worst['lang']))} "
                         f"{premium_text(worst['premium'])}")
    pivot = label(language_name(view.pivot))
    figure.update_layout(
        title=("; ".join(parts) + f" the tokens of {pivot}") if parts else "Production tokenizers",
        xaxis=dict(title=f"premium: tokens vs {pivot} for the same text (log scale)",
                   type="log", ticksuffix="x"),
        yaxis=dict(categoryorder="array", categoryarray=list(reversed(names))),
        legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0), margin=dict(t=110),
        hovermode="closest", height=max(420, 18 * len(order) + 200))
    return figure


def _sized_bars(view: RunView, title_at, traces_at) -> go.Figure:
    """Horizontal bars with a slider over sizes: `traces_at(size)` gives the traces and the
    language order for one size; only the chosen size's traces are visible."""
    figure = go.Figure()
    groups, orders = [], []
    for size in view.sizes:
        traces, order = traces_at(size)
        start = len(figure.data)
        for trace in traces:
            trace.visible = size == view.largest
            figure.add_trace(trace)
        groups.append(range(start, len(figure.data)))
        orders.append(order)
    steps = []
    for i, size in enumerate(view.sizes):
        visible = [index in groups[i] for index in range(len(figure.data))]
        names = [view.name(lang) for lang in reversed(orders[i])]
        steps.append(dict(label=f"{size:,}", method="update",
                          args=[{"visible": visible}, {"title.text": title_at(size),
                                                       "yaxis.categoryarray": names}]))
    active = view.sizes.index(view.largest)
    figure.update_layout(
        title=title_at(view.largest), barmode="group",
        yaxis=dict(categoryorder="array", categoryarray=[view.name(l) for l in reversed(orders[active])]),
        sliders=[dict(active=active, steps=steps, currentvalue=dict(prefix="vocabulary size: "),
                      pad=dict(t=40))] if len(view.sizes) > 1 else [],
        height=max(420, 28 * len(view.languages) + 200), margin=dict(t=110),
        legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0),
    )
    return figure


def overhead_by_language(view: RunView) -> go.Figure:
    """Token overhead beside byte overhead: the script's part and the vocabulary's part."""

    def traces(size: int):
        order = view.by_overhead(size)
        rows = view.shared[view.shared["size"] == size].set_index("lang").loc[order]
        names = [view.name(lang) for lang in order]
        tokens = go.Bar(y=names, x=rows["overhead"] * 100, orientation="h", name="token overhead",
                        marker_color=TOKENS_COLOR, meta={"langs": order},
                        customdata=np.column_stack([rows["premium"], rows["byte_premium"],
                                                    rows["pivot_bytes_per_token"] / rows["bytes_per_token"]]),
                        hovertemplate=("%{y}<br>token overhead %{x:+.1f} %<br>premium %{customdata[0]:.2f}"
                                       " = byte premium %{customdata[1]:.2f} x bytes-per-token ratio "
                                       "%{customdata[2]:.2f}<extra></extra>"))
        byte = go.Bar(y=names, x=(rows["byte_premium"] - 1) * 100, orientation="h",
                      name="byte overhead (UTF-8 bytes of the script)", marker_color=OTHER_COLOR,
                      meta={"langs": order},
                      hovertemplate="%{y}<br>byte overhead %{x:+.1f} %<extra></extra>")
        return [tokens, byte], order

    def title(size: int) -> str:
        return (f"Extra tokens per language at size {size:,}, beside the extra UTF-8 bytes: where "
                "the grey bar is longer, the vocabulary recovers part of the script's cost")

    figure = _sized_bars(view, title, traces)
    figure.update_xaxes(title=f"overhead vs {label(language_name(view.pivot))} (%)", ticksuffix=" %")
    return figure


def shared_vs_own(view: RunView) -> go.Figure:
    """Each language's tokens under the shared vocabulary and under its own."""
    own = view.frame[(view.frame["kind"] == Role.OWN.kind)
                     & (trained_language(view.frame) == view.frame["lang"])]
    own = own.set_index(["size", "lang"])["tokens"]

    def traces(size: int):
        rows = view.shared[view.shared["size"] == size].set_index("lang")
        cost = {lang: rows.loc[lang, "tokens"] / own[size, lang] - 1 for lang in rows.index
                if (size, lang) in own.index}
        order = sorted(cost, key=lambda lang: -cost[lang])
        names = [view.name(lang) for lang in order]
        # One colour per series, so that the legend's swatches are the bars' colours.
        shared = go.Bar(y=names, x=[rows.loc[lang, "tokens"] for lang in order], orientation="h",
                        name="shared vocabulary", marker_color=TOKENS_COLOR, meta={"langs": order},
                        customdata=[cost[lang] * 100 for lang in order],
                        hovertemplate="%{y}<br>shared: %{x:,} tokens<br>sharing costs "
                                      "%{customdata:+.1f} %<extra></extra>")
        alone = go.Bar(y=names, x=[own[size, lang] for lang in order], orientation="h",
                       name="its own vocabulary", marker_color=OTHER_COLOR, meta={"langs": order},
                       hovertemplate="%{y}<br>own: %{x:,} tokens<extra></extra>")
        return [shared, alone], order

    def title(size: int) -> str:
        return (f"What sharing costs: tokens under the shared vocabulary vs a vocabulary of the "
                f"same size ({size:,}) trained on the language alone")

    figure = _sized_bars(view, title, traces)
    figure.update_xaxes(title="tokens over the measured units")
    return figure


def cross_heatmap(view: RunView) -> go.Figure:
    """Bytes per token of text in Y under the vocabulary trained on X, with a size slider."""
    own = view.frame[view.frame["kind"] == Role.OWN.kind]
    languages = by_script(view.languages, view.pivot)
    vocabs = [lang for lang in languages if lang in set(own["vocab"])]
    figure = go.Figure()
    for size in view.sizes:
        rows = own[own["size"] == size].pivot(index="vocab", columns="lang", values="bytes_per_token")
        rows = rows.reindex(index=vocabs, columns=languages)
        figure.add_trace(go.Heatmap(
            z=rows.values, x=[view.name(l) for l in languages], y=[view.name(v) for v in vocabs],
            meta={"rows": vocabs, "cols": languages},
            colorscale="Viridis", visible=size == view.largest, colorbar=dict(title="bytes/token"),
            hovertemplate="vocabulary trained on %{y}<br>text in %{x}<br>%{z:.2f} bytes per token"
                          "<extra></extra>"))
    steps = [dict(label=f"{size:,}", method="update",
                  args=[{"visible": [s == size for s in view.sizes]},
                        {"title.text": _cross_title(size)}]) for size in view.sizes]
    figure.update_layout(
        title=_cross_title(view.largest),
        xaxis=dict(title="text language", tickangle=-45),
        yaxis=dict(title="vocabulary trained on", autorange="reversed"),
        sliders=[dict(active=len(view.sizes) - 1, steps=steps, pad=dict(t=120),
                      currentvalue=dict(prefix="vocabulary size: "))] if len(view.sizes) > 1 else [],
        height=max(500, 24 * len(vocabs) + 260),
    )
    return figure


def _cross_title(size: int) -> str:
    return (f"Bytes per token at size {size:,}: a vocabulary serves its own language best "
            "(the diagonal) and languages that share its script next")


def bytes_per_token(view: RunView) -> go.Figure:
    order = view.by_overhead(view.largest)
    figure = go.Figure()
    for lang in order:
        rows = view.shared_by_size(lang)
        figure.add_trace(go.Scatter(  # arrays, not Series: Plotly reads them 3x as fast
            x=rows["size"].to_numpy(), y=rows["bytes_per_token"].to_numpy(),
            mode="lines+markers", name=view.name(lang),
            line=dict(color=view.colors[lang]), meta={"lang": lang},
            hovertemplate=f"<b>{view.name(lang)}</b><br>size %{{x:,}}<br>%{{y:.2f}} bytes per token"
                          "<extra></extra>"))
    figure.update_layout(
        title="Bytes per token as the shared vocabulary grows: each merge packs more bytes into a "
              "token, and languages gain at different rates",
        xaxis=size_axis(view.sizes), yaxis=dict(title="UTF-8 bytes per token"),
        height=max(480, 22 * len(order)))
    return figure


STEADY_HEIGHT = 1_400
"""The tallest the box plot of unit premiums is drawn (two screens): languages beyond what fits
are a button away (`unit_premiums`)."""


@dataclass(frozen=True)
class UnitSpread:
    """One vocabulary or tokenizer in the box plot of unit premiums: its name, its rows of the
    frame by language (the premium and the mean of unit ratios, with their intervals), and its
    units' ratios by language (NaN where the pivot's unit has no tokens)."""

    name: str
    rows: pd.DataFrame
    ratios: dict[str, np.ndarray]


def box_stats(values: np.ndarray) -> dict[str, float]:
    """A box's quartiles and Tukey's whiskers (the farthest value within 1.5 times the box's
    width of it), over the positive finite values: what Plotly would compute from the values,
    computed here so that the page carries five numbers per box, not every unit's ratio (a log
    axis has no place for a ratio of 0: a unit the language needed no token for).

    >>> box_stats(np.array([1.0, 2.0, 3.0, 4.0, 100.0]))
    {'q1': 2.0, 'median': 3.0, 'q3': 4.0, 'lowerfence': 1.0, 'upperfence': 4.0}
    """
    values = values[np.isfinite(values) & (values > 0)]
    if not len(values):
        return dict.fromkeys(("q1", "median", "q3", "lowerfence", "upperfence"), float("nan"))
    q1, median, q3 = (float(v) for v in np.percentile(values, [25, 50, 75]))
    reach = 1.5 * (q3 - q1)
    return {"q1": q1, "median": median, "q3": q3,
            "lowerfence": float(values[values >= q1 - reach].min()),
            "upperfence": float(values[values <= q3 + reach].max())}


def unit_premiums(view: RunView, spreads: list[UnitSpread]) -> go.Figure:
    """Each language's unit premiums under every tokenizer (and the headline vocabulary) side
    by side, on a log axis (a premium of 4x is as far from 1x as 0.25x), with each one's
    premium (the ratio of totals, a diamond) and mean of unit ratios (a circle), each with its
    95 % bootstrap interval. At most `STEADY_HEIGHT` tall: beyond the languages that fit, the
    others are a button away (the axis shows one page of them at a time)."""
    first = spreads[0].rows
    order = sorted(first.index, key=lambda lang: -first.loc[lang, "premium"])
    names = [view.name(lang) for lang in order]
    many = len(spreads) > 1
    row = 14 + 10 * len(spreads)  # a row's height: a box per tokenizer
    figure = go.Figure()
    for index, spread in enumerate(spreads):
        color = PALETTE[index % len(PALETTE)]
        group = f"g{index}"
        for lang in order:
            if lang not in spread.ratios:
                continue
            stats = box_stats(spread.ratios[lang])
            figure.add_trace(go.Box(
                y=[view.name(lang)], **{key: [value] for key, value in stats.items()},
                name=label(spread.name), legendgroup=group, offsetgroup=group,
                showlegend=lang == order[0], marker_color=color, orientation="h",
                meta={"lang": lang}, hoverinfo="x+name"))
        rows = spread.rows.reindex([lang for lang in order if lang in spread.rows.index])
        langs = list(rows.index)
        for column, symbol, said in (("premium", "diamond", PREMIUM_ESTIMATOR),
                                     ("unit_premium", "circle-open", UNIT_ESTIMATOR)):
            if rows[column].isna().all():
                continue
            figure.add_trace(go.Scatter(  # one legend entry per estimator, for every tokenizer
                x=rows[column].to_numpy(), y=[view.name(lang) for lang in langs],
                mode="markers", name=f"{said}, with its 95 % interval", legendgroup=column,
                offsetgroup=group, meta={"langs": langs}, showlegend=index == 0,
                marker=dict(color="black", symbol=symbol, size=7),
                error_x=dict(type="data", symmetric=False, thickness=1,
                             array=(rows[f"{column}_ci_high"] - rows[column]).to_numpy(),
                             arrayminus=(rows[column] - rows[f"{column}_ci_low"]).to_numpy()),
                hovertemplate=f"%{{y}}<br>{said} %{{x:.3f}}<extra>{label(spread.name)}</extra>"))
    fits = max(1, (STEADY_HEIGHT - 130 - 100) // row)
    pages = [(start, min(start + fits, len(order))) for start in range(0, len(order), fits)]
    bottom = 100 if len(pages) > 1 else 50  # the axis's ticks, and the buttons under them
    yaxis = dict(categoryorder="array", categoryarray=names, autorange=False,
                 range=[pages[0][1] - 0.5, -0.5])
    buttons = [dict(label=f"languages {start + 1}-{end}", method="relayout",
                    args=[{"yaxis.range": [end - 0.5, start - 0.5]}]) for start, end in pages]
    height = min(STEADY_HEIGHT, row * (pages[0][1] - pages[0][0]) + 130 + bottom)
    vocab, size = view.primary
    under = f"at size {size:,}" if vocab == SHARED_SCOPE and not many else \
        "under each tokenizer" if many else f"under {label(vocab)}"
    figure.update_layout(
        title=(f"Premium unit by unit {under} (tokens of a unit / tokens of the same unit in "
               f"{label(language_name(view.pivot))}, log scale): how steady the tax is"),
        xaxis=dict(type="log"),  # the title says what it is: room under it for the buttons
        yaxis=yaxis, boxmode="group", scattermode="group", margin=dict(t=130, b=bottom),
        legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0),
        updatemenus=[dict(type="buttons", direction="right", buttons=buttons, x=0,
                          y=0, xanchor="left", yanchor="top", pad=dict(t=36),
                          showactive=True)]
        if len(pages) > 1 else [],
        height=height)
    return figure
