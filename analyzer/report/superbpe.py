"""The SuperBPE views of a report: what superword tokens do to each language's premium.

- `premiums`: each language's overhead vs the pivot at the largest size, under the shared
  vocabulary and under each SuperBPE vocabulary, with the share of its tokens that are
  superwords in the hover;
- `curves`: the overhead of each language against size under one SuperBPE vocabulary, with
  its transition marked (below it the vocabulary is the shared one's prefix).
"""

from __future__ import annotations

import plotly.graph_objects as go

from analyzer.corpus import language_name

from .fairness import PARITY_COLOR
from .figures import TOKENS_COLOR, RunView, label, size_axis
from .language_filter import by_script

SUPERBPE_COLORS = ["#b7791f", "#805ad5", "#dd6b20", "#319795"]


def premiums(view: RunView, effects: list[dict]) -> go.Figure:
    """Grouped bars: overhead at the largest size, shared and each superbpe@T, per language."""
    rows = [e for e in effects if e["pretokenizer"] == view.pretokenizer]
    shared = {e["lang"]: e["shared_premium"] for e in rows if e["shared_premium"] is not None}
    order = by_script(view.languages, view.pivot, key=lambda lang: shared.get(lang) or 0.0)
    names = [view.name(lang) for lang in order]
    figure = go.Figure(go.Bar(
        x=names, y=[((shared.get(lang) or 1.0) - 1) * 100 for lang in order], name="shared",
        marker_color=TOKENS_COLOR, meta={"langs": order},
        hovertemplate="<b>%{x}</b><br>shared: %{y:+.1f} %<extra></extra>"))
    transitions = {e["vocab"]: e["transition"] or 0 for e in rows}
    vocabs = sorted(transitions, key=transitions.__getitem__)
    for index, vocab in enumerate(vocabs):
        by_lang = {e["lang"]: e for e in rows if e["vocab"] == vocab}
        shares = [by_lang[lang]["superword_share"] for lang in order]
        figure.add_trace(go.Bar(
            x=names, y=[((by_lang[lang]["premium"] or 1.0) - 1) * 100 for lang in order],
            name=label(vocab), marker_color=SUPERBPE_COLORS[index % len(SUPERBPE_COLORS)],
            meta={"langs": order},
            customdata=[[(share or 0.0) * 100] for share in shares],
            hovertemplate=(f"<b>%{{x}}</b><br>{label(vocab)}: %{{y:+.1f}} %<br>"
                           "superwords: %{customdata[0]:.1f} % of its tokens<extra></extra>")))
    return _grouped(figure, f"At size {view.largest:,}: shared BPE and SuperBPE",
                    f"extra tokens vs {label(language_name(view.pivot))} (%)")


def _grouped(figure: go.Figure, title: str, axis: str) -> go.Figure:
    """The layout of a grouped bar chart of overheads by language."""
    figure.update_layout(barmode="group", title=title,
                         yaxis=dict(title=axis, ticksuffix=" %"), xaxis=dict(tickangle=-45),
                         height=520, hovermode="closest")
    return figure


def own_premiums(view: RunView, own_effects: list[dict]) -> go.Figure:
    """Grouped bars: each language's overhead at the largest size with its own vocabulary and
    with its own SuperBPE vocabulary at each T (each against the pivot's own of the same kind)."""
    rows = [e for e in own_effects if e["pretokenizer"] == view.pretokenizer]
    own = {e["lang"]: e["own_premium"] for e in rows if e["own_premium"] is not None}
    order = by_script(view.languages, view.pivot, key=lambda lang: own.get(lang) or 0.0)
    order = [lang for lang in order if lang in own]
    names = [view.name(lang) for lang in order]
    figure = go.Figure(go.Bar(
        x=names, y=[(own[lang] - 1) * 100 for lang in order], name="own vocabulary",
        marker_color=TOKENS_COLOR, meta={"langs": order},
        hovertemplate="<b>%{x}</b><br>own vocabulary: %{y:+.1f} %<extra></extra>"))
    for index, transition in enumerate(sorted({e["transition"] for e in rows})):
        by_lang = {e["lang"]: e for e in rows if e["transition"] == transition}
        figure.add_trace(go.Bar(
            x=names, y=[((by_lang[lang]["premium"] or 1.0) - 1) * 100 for lang in order],
            name=f"own SuperBPE @ {transition:,}",
            marker_color=SUPERBPE_COLORS[index % len(SUPERBPE_COLORS)], meta={"langs": order},
            customdata=[[(by_lang[lang]["superword_share"] or 0.0) * 100,
                         (by_lang[lang]["tokens_change"] or 0.0) * 100] for lang in order],
            hovertemplate=(f"<b>%{{x}}</b><br>own SuperBPE @ {transition:,}: %{{y:+.1f}} %<br>"
                           "its own tokens: %{customdata[1]:+.1f} %<br>superwords: "
                           "%{customdata[0]:.1f} % of its tokens<extra></extra>")))
    return _grouped(figure, f"At size {view.largest:,}: each language's own BPE and own SuperBPE",
                    f"extra tokens vs {label(language_name(view.pivot))}'s own (%)")


def curves(view: RunView, vocab: str, transition: int) -> go.Figure:
    """Overhead against size under one SuperBPE vocabulary, the transition a dashed line."""
    rows = view.frame[view.frame["vocab"] == vocab]
    figure = go.Figure()
    largest = rows[rows["size"] == view.largest].set_index("lang")["overhead"]
    for lang in sorted(view.languages, key=lambda lang: -largest.get(lang, 0.0)):
        line = rows[rows["lang"] == lang].sort_values("size")
        figure.add_trace(go.Scatter(
            x=line["size"], y=line["overhead"] * 100, mode="lines+markers", name=view.name(lang),
            meta={"lang": lang}, line=dict(color=view.colors[lang],
                                           dash="dot" if lang == view.pivot else "solid"),
            hovertemplate=(f"<b>{view.name(lang)}</b><br>size %{{x:,}}<br>overhead "
                           "%{y:+.1f} %<extra></extra>")))
    # The transition, dashed (its label is the title: an annotation misplaces on a log axis).
    figure.add_vline(x=transition, line=dict(color=PARITY_COLOR, dash="dash"))
    figure.update_layout(
        title=f"{label(vocab)}: ordinary BPE up to {transition:,} (dashed), then merges across "
              "words",
        xaxis=size_axis(view.sizes),
        yaxis=dict(title=f"extra tokens vs {label(language_name(view.pivot))} (%)",
                   ticksuffix=" %"),
        height=max(460, 20 * len(view.languages)), hovermode="closest")
    return figure


def sections(view: RunView, effects: list[dict], vocabularies,
             own_effects: list[dict] | None = None) -> list[tuple[str, str, object]]:
    """The report's SuperBPE sections: the comparison, then one curve per transition, then
    (with per-language vocabularies) each language's own BPE against its own SuperBPE."""
    found: list[tuple[str, str, object]] = [(
        "SuperBPE: superwords and the tax",
        "SuperBPE (Liu et al. 2025) trains ordinary BPE up to a transition size, then lets merges "
        "cross the spaces between words (SuperBPE's stage-2 split), so that frequent phrases "
        "become single tokens. Bars: each language's overhead at the largest size under the "
        "shared vocabulary and under each SuperBPE vocabulary; the hover says how many of its "
        "tokens are superwords.", premiums(view, effects))]
    for v in vocabularies:
        transition = v.identity.transition
        if (v.kind.two_stages and v.kind.trained_on_every_language
                and v.pretokenizer == view.pretokenizer and transition):
            found.append((f"SuperBPE with its transition at {transition:,}",
                          "Up to the transition the vocabulary is the shared one's prefix; past "
                          "it, each size counts with SuperBPE's stage-2 split.",
                          curves(view, v.scope, transition)))
    if own_effects and any(e["pretokenizer"] == view.pretokenizer for e in own_effects):
        found.append(("SuperBPE per language",
                      "Each language's own vocabulary, and its own SuperBPE vocabulary (its own "
                      "merges up to the transition, then merges across words on its own texts), "
                      "each against the pivot's own of the same kind; the hover says how much "
                      "SuperBPE changes the language's own tokens.", own_premiums(view, own_effects)))
    return found
