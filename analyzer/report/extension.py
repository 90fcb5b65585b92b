"""The extension views of a report: what adding tokens to a production tokenizer does to each
language's premium.

- `curves`: each language's overhead vs the pivot against the tokens added, from the base
  (+0) to every trained addition, exact at every number of added tokens (from the per-merge
  replacements), with the 10 % line (and the run's target) dashed;
- `reach`: per language, the added tokens that bring it within 10 % of the pivot, or that no
  trained addition does.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analyzer.corpus import language_name
from analyzer.metrics import WITHIN, RunData, extension_curves
from analyzer.store import VocabularyRead

from .fairness import PARITY_COLOR
from .figures import TOKENS_COLOR, RunView, label

POINTS = 400
"""At most this many points per curve (more would only weigh the page down)."""


def curves(view: RunView, data: RunData, vocabulary: VocabularyRead,
           target: float | None) -> go.Figure:
    """Overhead against the tokens added, one line per language (dotted: not among the
    languages that trained the additions)."""
    vocab = vocabulary.scope
    tokens = extension_curves(data, vocabulary)
    pivot = tokens[view.pivot]
    merges = len(pivot) - 1
    # Points spread on a log scale of the added tokens (0 drawn as the axis' start), plus the
    # last: the curve's shape shows where each size counts.
    shown = np.unique(np.concatenate([[0, merges], np.geomspace(1, max(1, merges), POINTS)
                                      .astype(int)]))
    trained = set(data.run.extend_langs or data.run.languages)
    final = {lang: tokens[lang][-1] / pivot[-1] for lang in view.languages}
    figure = go.Figure()
    for lang in sorted(view.languages, key=lambda lang: -final[lang]):
        overhead = (tokens[lang][shown] / pivot[shown] - 1) * 100
        figure.add_trace(go.Scatter(
            x=shown + 1, y=overhead, mode="lines", name=view.name(lang), meta={"lang": lang},
            customdata=shown, line=dict(color=view.colors[lang],
                                        dash="solid" if lang in trained else "dot"),
            hovertemplate=(f"<b>{view.name(lang)}</b><br>+%{{customdata:,}} tokens<br>overhead "
                           "%{y:+.1f} %<extra></extra>")))
    for goal, name in ((WITHIN, "within 10 %"), (target, f"target {target:g}" if target else "")):
        if goal:
            figure.add_hline(y=(goal - 1) * 100, line=dict(color=PARITY_COLOR, dash="dash"),
                             annotation_text=name, annotation_position="top left")
    ticks = [t for t in (0, 16, 128, 1024, 8192, 32768, 131072) if t <= merges]
    figure.update_layout(
        title=f"{label(vocab)}: overhead by tokens added (dotted: did not train the additions)",
        xaxis=dict(type="log", title="tokens added to the base (log scale; left edge: the base)",
                   tickvals=[t + 1 for t in ticks], ticktext=[f"+{t:,}" for t in ticks]),
        yaxis=dict(title=f"extra tokens vs {label(language_name(view.pivot))} (%)",
                   ticksuffix=" %"),
        height=max(460, 20 * len(view.languages)), hovermode="closest")
    return figure


def reach(view: RunView, reached: pd.DataFrame, vocab: str) -> go.Figure:
    """Per language, its overhead with the base and with every trained addition, the bar's
    label saying how many added tokens bring it within 10 % of the pivot (or that none does)."""
    rows = reached[(reached["vocab"] == vocab) & (reached["lang"] != view.pivot)]
    rows = rows.sort_values("base_premium", ascending=False)
    merges = int(rows["merges"].max()) if not rows.empty else 0
    names = [view.name(lang) for lang in rows["lang"]]
    within = [None if pd.isna(v) else int(v) for v in rows["to_within"]]
    labels = [f"not within +{merges:,}" if v is None else ("base" if v == 0 else f"+{v:,}")
              for v in within]
    langs = list(rows["lang"])
    figure = go.Figure([
        go.Bar(x=names, y=(rows["base_premium"] - 1) * 100, name="the base",
               marker_color="#a0aec0", meta={"langs": langs},
               hovertemplate="<b>%{x}</b><br>the base: %{y:+.1f} %<extra></extra>"),
        go.Bar(x=names, y=(rows["premium"] - 1) * 100, name=f"with +{merges:,}",
               marker_color=TOKENS_COLOR, meta={"langs": langs}, customdata=labels,
               hovertemplate=(f"<b>%{{x}}</b><br>with +{merges:,}: %{{y:+.1f}} %<br>within 10 %: "
                              "%{customdata}<extra></extra>"))])
    figure.add_hline(y=(WITHIN - 1) * 100, line=dict(color=PARITY_COLOR, dash="dash"))
    figure.update_layout(
        barmode="group", title=f"{label(vocab)}: overhead with the base and with +{merges:,} "
                               "(hover: the tokens to add to come within 10 %, dashed)",
        yaxis=dict(title=f"extra tokens vs {label(language_name(view.pivot))} (%)",
                   ticksuffix=" %"), xaxis=dict(tickangle=-45), height=520, hovermode="closest")
    return figure


def sections(view: RunView, data: RunData, reached: pd.DataFrame) -> list[tuple[str, str, object]]:
    """The report's extension sections: per extended tokenizer, the curves and the reach."""
    found: list[tuple[str, str, object]] = []
    run = data.run
    langs = ", ".join(run.extend_langs) if run.extend_langs else "every language of the run"
    for v in data.vocabularies:
        if not v.kind.extends or v.base_size is None:
            continue
        base = v.identity.name
        found.append((
            f"Extending {base}",
            f"{base}'s own pre-tokenizer and library cut and encode the texts; merges learned over "
            f"its ids on the training texts of {langs} add tokens to it. Each line is a "
            "language's overhead against the pivot as tokens are added, exact at every number "
            "(left edge: the base); the dashed line is within 10 % of the pivot.",
            curves(view, data, v, run.target)))
        found.append((
            f"Tokens to add to {base}",
            "Each language's overhead with the base and with every trained addition; the hover "
            "says how many added tokens bring it within 10 % of the pivot (the dashed line), exact "
            "from the per-merge replacements, or that none of the trained additions does.",
            reach(view, reached, v.scope)))
    return found
