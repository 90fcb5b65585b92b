"""The report's first screen: the plain sentences that matter most, and one table, language by
vocabulary or tokenizer, each cell a premium coloured on a log scale (`analyzer.metrics.answer`
computes both). It scrolls in its own box with its headings and language names fixed, so it
reads the same at 12 languages and at 200; it sorts, groups by script, filters with the page's
language filter, and downloads as CSV (static/answer.css; static/tables.js, for every `table.data` of a page).
"""

from __future__ import annotations

import math
from html import escape

import pandas as pd

from analyzer.corpus import language_name, script_name
from analyzer.identity import VocabKind
from analyzer.metrics import tokenizer_label
from analyzer.metrics.answer import premium_text
from analyzer.metrics.frames import PREMIUM_ESTIMATOR, UNIT_ESTIMATOR

from .downloads import file_name, plain_number, table_attributes

LOW, HIGH = 0.5, 8.0
"""The colour scale's ends: half the pivot's tokens (blue) to eight times (dark red)."""
ABOVE = [(0.0, (255, 255, 255)), (1 / 3, (253, 212, 158)), (2 / 3, (252, 141, 89)),
         (1.0, (179, 0, 0))]
BELOW = [(0.0, (255, 255, 255)), (1.0, (67, 147, 195))]
"""Colour stops from 1x outwards, on log2 of the premium."""


def cell_color(premium: float) -> tuple[str, bool]:
    """The background of a premium's cell, and whether it is dark (its text then white).

    >>> cell_color(1.0), cell_color(8.0), cell_color(0.5)
    (('rgb(255,255,255)', False), ('rgb(179,0,0)', True), ('rgb(67,147,195)', True))
    """
    if premium != premium or premium <= 0:
        return "#eee", False
    place = math.log2(premium) / math.log2(HIGH if premium >= 1 else 1 / LOW)
    stops = ABOVE if premium >= 1 else BELOW
    place = min(abs(place), 1.0)
    for (start, low), (end, high) in zip(stops, stops[1:]):
        if place <= end:
            share = (place - start) / (end - start)
            rgb = [round(a + (b - a) * share) for a, b in zip(low, high)]
            return f"rgb({rgb[0]},{rgb[1]},{rgb[2]})", place > 0.6
    return f"rgb{stops[-1][1]}".replace(" ", ""), True


def unit_estimate(row) -> str:
    """A premium's other estimator, the mean of unit ratios, with its interval, for a cell's
    hover (`premium_table`'s row): beside the ratio of totals the cell shows."""
    mean, low, high = row["unit_premium"], row["unit_premium_ci_low"], row["unit_premium_ci_high"]
    if pd.isna(mean):
        return f"no {UNIT_ESTIMATOR} (joined counts)"
    interval = "" if pd.isna(low) else f", 95% interval {premium_text(low)} to {premium_text(high)}"
    return f"{UNIT_ESTIMATOR} {premium_text(mean)}{interval}"


def answer_table(table: pd.DataFrame, pivot: str, run: int) -> str:
    """The languages by vocabulary table (`premium_table`'s rows), highest median premium
    first; each cell's title says its interval and tokens. A tokenizer's heading has its
    models under its name (all of them in its title and `data-label`; its vocabulary's name in
    `data-vocab`, by which the bill calculator finds a tokenizer's tokens); its download is
    `run-N-premiums-vs-REF.csv`, a column per vocabulary named by it (`downloads`)."""
    columns = list(dict.fromkeys(table["column"]))
    wide = table.pivot(index="lang", columns="column", values="premium")[columns]
    medians = wide.median(axis=1)
    order = medians.sort_values(ascending=False, kind="stable").index
    by_cell = table.set_index(["lang", "column"])
    kinds = dict(zip(table["column"], table["kind"]))
    vocabs = dict(zip(table["column"], table["vocab"]))

    def head(column: str) -> str:
        kind = VocabKind(kinds[column])
        named = tokenizer_label(vocabs[column]) if kind.production else column
        models = tokenizer_label(vocabs[column], short=True)[len(vocabs[column]):].strip() \
            if kind.production and named != column else ""
        return (f"<th data-sort='number' scope='col' data-csv='{escape(column, quote=True)}' "
                f"data-label='{escape(named, quote=True)}' data-vocab='{escape(vocabs[column], quote=True)}' "
                f"title='{escape(f'{kind.about.label}: {named}', quote=True)}'>{escape(column)}"
                + (f"<br><span class='muted'>{escape(models)}</span>" if models else "")
                + "</th>")

    heads = "".join(head(column) for column in columns)
    rows = []
    for lang in order:
        cells = []
        for column in columns:
            if (lang, column) not in by_cell.index:
                cells.append("<td data-v=''>&ndash;</td>")
                continue
            row = by_cell.loc[(lang, column)]
            premium = float(row["premium"])
            color, dark = cell_color(premium)
            low, high = row["premium_ci_low"], row["premium_ci_high"]
            interval = ("" if pd.isna(low) else
                        f", 95% interval {premium_text(low)} to {premium_text(high)}")
            title = (f"{language_name(lang)} under {column}: {premium_text(premium)} the tokens "
                     f"of {language_name(pivot)} ({PREMIUM_ESTIMATOR}){interval}; "
                     f"{unit_estimate(row)}; {int(row['tokens']):,} tokens")
            bounds = "" if pd.isna(low) else f" data-lo='{low:.4f}' data-hi='{high:.4f}'"
            cells.append(f"<td data-v='{plain_number(premium)}' data-t='{int(row['tokens'])}'{bounds} "
                         f"style='background:{color}' class='{'dark' if dark else ''}' "
                         f"title='{escape(title, quote=True)}'>{premium_text(premium)}</td>")
        rows.append(f"<tr data-lang='{escape(lang, quote=True)}'>"
                    f"<th scope='row' data-v='{escape(language_name(lang), quote=True)}'>"
                    f"{escape(language_name(lang))} <span class='muted'>{escape(lang)}</span></th>"
                    f"<td class='script' data-v='{escape(script_name(lang), quote=True)}'>"
                    f"{escape(script_name(lang))}</td>"
                    f"<td data-v='{plain_number(medians[lang])}'>{premium_text(medians[lang])}</td>"
                    f"{''.join(cells)}</tr>")
    return (f"<div class='answer'><div class='tools'>"
            f"<label><input type='checkbox' class='by-script'> group by script</label>"
            f"<button type='button' class='csv' data-table='answer-table'>Download CSV</button>"
            f"<span class='legend'>{premium_text(LOW)} <span class='bar'></span> "
            f"{premium_text(HIGH)} the tokens of <span class='reference'>"
            f"{escape(language_name(pivot))}</span> ({PREMIUM_ESTIMATOR}), log scale; "
            + ("trained vocabularies at their largest size; "
               if any(not VocabKind(kind).measured for kind in kinds.values()) else "")
            + f"hover a cell for its interval and the {UNIT_ESTIMATOR}</span></div>"
            f"<div class='scroll'><table class='data' id='answer-table'"
            f"{table_attributes(file_name(run, 'premiums-vs-{reference}'), run, pivot)}>"
            f"<thead><tr><th data-sort='text' scope='col' data-csv='language'>language</th>"
            f"<th data-sort='text' scope='col' data-csv='script'>script</th>"
            f"<th data-sort='number' scope='col' aria-sort='descending' data-csv='median_premium' "
            f"title='the median of the "
            f"row: half the vocabularies and tokenizers charge the language more'>median</th>"
            f"{heads}</tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table></div></div>")
