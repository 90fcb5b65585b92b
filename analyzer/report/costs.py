"""The cost view: what the same content costs each language, under each priced model whose
tokenizer the run measured (and under a trained vocabulary at a price the user names), and how
much of the same content a context window holds in each language (and how many characters)."""

from __future__ import annotations

from html import escape

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analyzer.corpus import language_name
from analyzer.external.catalog import FramingBasis
from analyzer.metrics.answer import premium_text
from analyzer.metrics.costs import CONTENT_CHARS, content_share, scaled_cost

from .downloads import file_name, heading, number, table_attributes

CONTENT_FITS = "content in the window, of the pivot's"
"""The column a buyer reads for context: how much of the same content fits (1 / premium)."""


def content_note(pivot: str) -> str:
    return (f"Costs are for the same content as {CONTENT_CHARS:,} characters of "
            f"{language_name(pivot)} text: the measured units, scaled.")


def model_costs_heatmap(costs: pd.DataFrame, languages: list[str], pivot: str) -> go.Figure:
    """The same content's input cost: a row per language (dearest first), a column per model;
    each cell says the dollars, its colour how many times the pivot's cost that is (so the
    tax shows under cheap models as under dear ones). Where any model's framing is known, a
    menu switches to the same content sent as one request per unit (each request framed by its
    model's chat format; a model whose framing is not known is blank there)."""
    models = list(dict.fromkeys(costs["model"]))

    def table(values: str, rows: list[str]) -> np.ndarray:
        return costs.pivot(index="lang", columns="model", values=values) \
            .reindex(index=rows, columns=models).to_numpy(dtype=float)

    by_cost = costs.groupby("lang")["cost_ratio"].mean().sort_values(ascending=False).index
    rows = [lang for lang in by_cost if lang in languages]
    names = [f"{language_name(lang)} ({lang})" for lang in rows]
    content = table("cost_ratio", rows)
    framed = table("request_ratio", rows)
    # The colours span the bulk of the ratios: a few tenfold ones would leave every other cell
    # pale. The cells above the scale are clipped to its top colour and marked with ▲. One
    # scale for both views, so that switching shows the ratios narrowing.
    finite = content[np.isfinite(content)]
    top = max(float(np.percentile(finite, 95)), 1.1) if finite.size else 2.0
    pivot_name = language_name(pivot)

    def heatmap(values: np.ndarray, dollars: np.ndarray, visible: bool, what: str) -> go.Heatmap:
        clipped = np.nan_to_num(values, nan=0.0) > top
        text = [["" if np.isnan(value) else f"${value:,.2f}" + (" ▲" if over else "")
                 for value, over in zip(row, marks)] for row, marks in zip(dollars, clipped)]
        title = f"x {pivot_name}" + (f" (▲ above {top:.1f})" if clipped.any() else "")
        return go.Heatmap(
            z=values, x=models, y=names, colorscale="Reds", zmin=1, zmax=top, visible=visible,
            meta={"rows": rows}, text=text, texttemplate="%{text}", textfont=dict(size=10),
            colorbar=dict(title=title), name=what,
            hovertemplate=f"%{{y}}<br>%{{x}}<br>{what}: input cost %{{text}}<br>"
                          "%{z:.2f}x the pivot's<extra></extra>")

    requests = int(costs["requests"].iloc[0]) if len(costs) else 0
    content_title = f"Input cost of the same content (colour: times the {pivot_name} cost)"
    framed_title = (f"Input cost as {requests:,} one-unit requests, each framed by its chat "
                    f"format (colour: times the {pivot_name} cost)")
    figure = go.Figure(heatmap(content, table("input_cost", rows), True, "content"))
    layout: dict = {}
    if np.isfinite(framed).any():
        figure.add_trace(heatmap(framed, table("request_cost", rows), False,
                                 f"{requests:,} one-unit requests"))
        # Above the models' names (the x axis is on top, its labels slanted): 120 px over the
        # plot, once pin_around_plot has turned the offset into pixels.
        layout["updatemenus"] = [dict(
            type="buttons", direction="right", x=0, y=1.4, xanchor="left", yanchor="bottom",
            showactive=True, buttons=[
                dict(label="the content", method="update",
                     args=[{"visible": [True, False]}, {"title.text": content_title}]),
                dict(label=f"as {requests:,} one-unit requests", method="update",
                     args=[{"visible": [False, True]}, {"title.text": framed_title}])])]
    figure.update_layout(
        title=content_title,
        xaxis=dict(tickangle=-30, side="top"),
        yaxis=dict(autorange="reversed"),
        height=max(420, 22 * len(rows) + 240 + (40 if layout else 0)),
        margin=dict(t=220 if layout else 180),
        **layout,
    )
    return figure


def model_cost_table(costs: pd.DataFrame, run: int, pivot: str) -> str:
    """One priced model: per language, tokens, the cost of the same content as input and as
    output, the cost relative to the pivot's, how much of the same content fits in the model's
    context window against the pivot, and how many of the language's characters fit there.
    Its download, `run-N-cost-MODEL.csv`, holds the model, its price and what a cost is for
    on every row (`downloads`)."""
    first = costs.iloc[0]
    summary = (f"{first['model']} ({first['provider']}, tokenizer {first['tokenizer']}): "
               f"${first['input_price']:.2f} in / ${first['output_price']:.2f} out per million "
               f"tokens, {int(first['context_window']):,}-token window; listed {first['date']}")
    framing = framing_note(first)
    known = not pd.isna(first["request_ratio"])
    body = "".join(
        f"<tr data-lang='{escape(row.lang, quote=True)}'>{_language(row.lang)}"
        f"{number(int(row.tokens), f'{row.tokens:,}')}"
        f"{number(row.input_cost, f'${row.input_cost:,.3f}')}"
        f"{number(row.output_cost, f'${row.output_cost:,.3f}')}"
        f"{number(row.cost_ratio, f'{row.cost_ratio:.2f}x')}"
        f"{number(row.content_share, f'{row.content_share:.0%}')}"
        f"{number(row.context_chars, f'{row.context_chars:,.0f}')}"
        + (f"{number(row.request_cost, f'${row.request_cost:,.3f}')}"
           f"{number(row.request_ratio, f'{row.request_ratio:.2f}x')}" if known else "")
        + "</tr>"
        for row in costs.sort_values("cost_ratio", ascending=False).itertuples())
    source = escape(str(first["source"]))
    requests = (heading(f"input cost as {int(first['requests']):,} one-unit requests",
                        "request_input_cost_usd")
                + heading("vs pivot, as requests", "request_cost_vs_reference")) if known else ""
    columns = {"model": str(first["model"]), "provider": str(first["provider"]),
               "tokenizer": str(first["tokenizer"]),
               "input_usd_per_million_tokens": float(first["input_price"]),
               "output_usd_per_million_tokens": float(first["output_price"]),
               "context_window_tokens": int(first["context_window"]),
               "price_date": str(first["date"]), "content_chars_of_reference": CONTENT_CHARS}
    if known:
        columns["requests"] = int(first["requests"])
    attributes = table_attributes(file_name(run, f"cost-{first['model']}"), run, pivot, columns)
    return (f"<details><summary>{escape(summary)}</summary>"
            f"<p class='muted'>Source: <a href='{source}'>{source}</a>. {escape(framing)}</p>"
            f"<table class='numbers data'{attributes}><thead><tr>"
            f"{heading('language', 'language')}{heading('tokens', 'tokens')}"
            f"{heading('input cost', 'input_cost_usd')}{heading('output cost', 'output_cost_usd')}"
            f"{heading('vs pivot', 'cost_vs_reference')}"
            f"{heading(CONTENT_FITS, 'content_in_window_vs_reference')}"
            f"{heading('characters of the language in the window', 'chars_in_window')}"
            f"{requests}</tr></thead><tbody>{body}</tbody></table></details>")


def _language(lang: str) -> str:
    """A row's language cell: its name and code shown, its name downloaded (`language`, beside
    the code its row's `lang` gives)."""
    name = language_name(lang)
    return (f"<td data-v='{escape(name, quote=True)}'>{escape(name)} "
            f"<code>{escape(lang)}</code></td>")


def framing_note(row) -> str:
    """What a model's chat format adds per request, and how that is known, in words."""
    if pd.isna(row["framing"]):
        return (f"Per request: not known for {row['tokenizer']}, so only the content is "
                "costed.")
    tokens = int(row["framing"])
    if row["framing_basis"] == FramingBasis.NONE:
        return f"{row['tokenizer']} is a completion model's: a request is its text."
    how = ("measured with the model's own chat template"
           if row["framing_basis"] == FramingBasis.MEASURED
           else "from its maker's documented format")
    return (f"Each request adds {tokens} tokens of chat format ({how}; analyzer tokenizers "
            f"says which): {int(row['requests']):,} one-unit requests add "
            f"{tokens * int(row['requests']):,} tokens in every language.")


def cost_table(frame: pd.DataFrame, pivot: str, vocab: str, size: int, price: float,
               context_window: int, run: int) -> str:
    """One vocabulary at a price the user names: per language, the cost of the same content,
    the extra over the pivot's, how much of the same content fits in a `context_window`
    against the pivot, and how many of the language's characters fit there. Its download,
    `run-N-cost-VOCAB-SIZE-assumed.csv`, holds the price assumed on every row."""
    rows = frame[(frame["vocab"] == vocab) & (frame["size"] == size)].set_index("lang")
    pivot_chars = rows.loc[pivot, "chars"]
    pivot_tokens = rows.loc[pivot, "tokens"]
    pivot_cost = scaled_cost(pivot_tokens, pivot_chars, price)
    body = []
    for lang in rows.sort_values("premium", ascending=False).index:
        row = rows.loc[lang]
        cost = scaled_cost(row["tokens"], pivot_chars, price)
        fits = row["chars_per_token"] * context_window
        share = content_share(row["tokens"], pivot_tokens)
        body.append(
            f"<tr data-lang='{escape(lang, quote=True)}'>{_language(lang)}"
            f"{number(int(row['tokens']), format(int(row['tokens']), ','))}"
            f"{number(cost, f'{cost:,.3f}')}{number(cost - pivot_cost, f'{cost - pivot_cost:+,.3f}')}"
            f"{number(row['premium'], premium_text(row['premium']))}"
            f"{number(share, f'{share:.0%}')}{number(fits, f'{fits:,.0f}')}</tr>")
    columns = {"vocab": vocab, "size": int(size), "usd_per_million_tokens": float(price),
               "context_window_tokens": int(context_window),
               "content_chars_of_reference": CONTENT_CHARS}
    attributes = table_attributes(file_name(run, f"cost-{vocab}-{size}-assumed"), run, pivot,
                                  columns)
    return (f"<table class='numbers data'{attributes}><thead><tr>"
            f"{heading('language', 'language')}{heading('tokens', 'tokens')}"
            + heading(f"cost, US$ at ${price:g} per million tokens", "cost_usd") +
            f"{heading('extra vs pivot, US$', 'extra_vs_reference_usd')}"
            f"{heading('vs pivot', 'premium_vs_reference')}"
            f"{heading(CONTENT_FITS, 'content_in_window_vs_reference')}"
            + heading(f"characters of the language in a {context_window:,}-token window",
                      "chars_in_window") +
            f"</tr></thead><tbody>{''.join(body)}</tbody></table>")
