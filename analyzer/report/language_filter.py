"""How a page stays readable with sixty languages: languages grouped by script, and one filter
(by script, or by typing part of a name or code) that narrows every chart at once, in the
browser, offline.

Every trace that draws languages says which in its `meta`: `{"lang": code}` for a trace that is
one language (a line), `{"langs": [code per point]}` for one point per language (bars, markers),
`{"rows": [...], "cols": [...]}` for a heatmap's rows and columns. The filter keeps the points,
rows and columns of the languages it shows, and leaves each trace's visibility (which sliders and
menus set) as it is. A table row that is one language says which in `data-lang`: the filter
hides the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from html import escape

from analyzer.corpus import language_name, script_name, script_of

FOLDED_SCRIPTS = 8
"""Above this many scripts, the filter's script boxes fold under one switch."""
MANY_LANGUAGES = 12
"""Above this many languages, one line per language is unreadable: heatmaps instead."""


def by_script(languages: list[str], pivot: str,
              key: Callable[[str], float] | None = None) -> list[str]:
    """Languages grouped by script: the pivot's script first, then the others by name; within
    a script, by `key` descending (the highest overhead first), else by code.

    >>> by_script(["rus_Cyrl", "hin_Deva", "fra_Latn", "eng_Latn", "ukr_Cyrl"], "eng_Latn")
    ['eng_Latn', 'fra_Latn', 'rus_Cyrl', 'ukr_Cyrl', 'hin_Deva']
    """
    home = script_of(pivot)

    def order(lang: str) -> tuple:
        script = script_of(lang)
        within = -key(lang) if key is not None else 0.0
        return (script != home, script_name(lang), lang != pivot, within, lang)

    return sorted(languages, key=order)


def script_label(lang: str) -> str:
    """A row label that shows the script: 'Devanagari: Hindi'."""
    return f"{script_name(lang)}: {language_name(lang)}"


def language_names(languages: Iterable[str]) -> dict[str, str]:
    """Each language's name by its code: the page data's `names`, which the filter searches
    (static/filter.js) and a results page's sentences say (static/results.js)."""
    return {lang: language_name(lang) for lang in languages}


def filter_bar(languages: list[str]) -> str:
    """The filter's controls (above the charts); the names it searches are the page data's
    (`language_names`), its script static/filter.js."""
    scripts: dict[str, list[str]] = {}
    for lang in languages:
        scripts.setdefault(script_of(lang), []).append(lang)
    boxes = "".join(
        f"<label><input type='checkbox' value='{escape(script)}' checked> "
        f"{escape(script_name(codes[0]))} <span class='muted'>({len(codes)})</span></label>"
        for script, codes in sorted(scripts.items(), key=lambda item: script_name(item[1][0])))
    # Many scripts fold under one switch: the bar stays a line or two tall on every screen.
    picked = (f"<details class='scripts'><summary>{len(scripts)} scripts</summary>{boxes}</details>"
              if len(scripts) > FOLDED_SCRIPTS else f"<span class='scripts'>{boxes}</span>")
    return (f"<div id='language-filter' class='filter'><strong>Languages</strong> "
            f"<input type='search' placeholder='type a name or code' aria-label='filter languages'>"
            f" {picked} <span class='muted' id='filter-count'></span></div>")
