"""The algorithm view of a report: each language's overhead under BPE, Unigram and WordPiece
vocabularies trained on the same texts, at the same size and pre-tokenizer."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from analyzer.corpus import language_name
from analyzer.identity import Algorithm, VocabKind

from .figures import RunView, label
from .language_filter import by_script
from .superbpe import _grouped

ALGORITHM_COLORS = {str(algorithm): VocabKind.trained_with(algorithm, one_language=False).about.color
                    for algorithm in Algorithm}
"""Each algorithm in the colour of its plain kind on every language (BPE's is shared BPE's)."""


def premiums(view: RunView, rows: pd.DataFrame) -> go.Figure:
    """Grouped bars per language, one per algorithm, at one size at a time (a menu chooses;
    the largest first); the hover says the tokens against BPE's."""
    rows = rows[rows["pretokenizer"] == view.pretokenizer]
    sizes = sorted({int(size) for size in rows["size"]})
    largest = sizes[-1]
    bpe = rows[(rows["algorithm"] == Algorithm.BPE) & (rows["size"] == largest)].set_index("lang")["premium"]
    order = by_script(view.languages, view.pivot, key=lambda lang: float(bpe.get(lang, 0.0)))
    names = [view.name(lang) for lang in order]
    figure = go.Figure()
    shown: list[int] = []  # each trace's size
    for size in sizes:
        for algorithm, color in ALGORITHM_COLORS.items():
            part = rows[(rows["algorithm"] == algorithm) & (rows["size"] == size)].set_index("lang")
            if part.empty:
                continue
            figure.add_trace(go.Bar(
                x=names, y=[(float(part["premium"].get(lang, 1.0)) - 1) * 100 for lang in order],
                name=f"{algorithm} {size:,}", marker_color=color, meta={"langs": order},
                visible=size == largest,
                customdata=[[float(part["vs_bpe"].get(lang, 0.0)) * 100] for lang in order],
                hovertemplate=(f"<b>%{{x}}</b><br>{algorithm} at {size:,}: %{{y:+.1f}} %<br>"
                               "tokens vs BPE: %{customdata[0]:+.1f} %<extra></extra>")))
            shown.append(size)
    figure = _grouped(figure, f"BPE, Unigram and WordPiece at the same size (pre-tokenizer "
                              f"{view.pretokenizer})",
                      f"extra tokens vs {label(language_name(view.pivot))} (%)")
    if len(sizes) > 1:
        figure.update_layout(updatemenus=[dict(
            buttons=[dict(label=f"size {size:,}", method="update",
                          args=[{"visible": [trace == size for trace in shown]}])
                     for size in reversed(sizes)],
            direction="down", x=1.0, xanchor="right", y=1.12, yanchor="bottom", showactive=True)])
    return figure


def sections(view: RunView, rows: pd.DataFrame) -> list[tuple[str, str, object]]:
    if rows.empty or not (rows["pretokenizer"] == view.pretokenizer).any():
        return []
    return [("Algorithms: BPE, Unigram, WordPiece",
             "Vocabularies trained on every language with each algorithm, on the same texts, "
             "pre-tokenizer, byte-level alphabet and size (BPE by the analyzer's exact engine; "
             "Unigram and WordPiece by its own engines, counted as Hugging Face tokenizers counts "
             "them, each size its own training). "
             "Bars: each language's overhead vs the pivot under each; the hover gives its tokens "
             "against BPE's. The menu chooses the size.", premiums(view, rows))]
