"""One colour per language, the same on every chart of a page."""

from __future__ import annotations

from plotly.colors import qualitative

PALETTE = qualitative.Dark24 + qualitative.Light24 + qualitative.Alphabet
PIVOT_COLOR = "#111111"


def language_colors(languages: list[str], pivot: str) -> dict[str, str]:
    """The pivot in black; the others in palette order, by code, so a language keeps its
    colour whichever chart (or sort order) it appears in."""
    others = sorted(lang for lang in languages if lang != pivot)
    colors = {lang: PALETTE[i % len(PALETTE)] for i, lang in enumerate(others)}
    colors[pivot] = PIVOT_COLOR
    return colors
