"""The report's first screen: the plain sentences that matter most, and one table, language by
vocabulary or tokenizer, each cell a premium coloured on a log scale (`analyzer.metrics.answer`
computes both). It scrolls in its own box with its headings and language names fixed, so it
reads the same at 12 languages and at 200; it sorts, groups by script, filters with the page's
language filter, and downloads as CSV (`TABLE_SCRIPT`, for every `table.data` of a page).
"""

from __future__ import annotations

import math
from html import escape

import pandas as pd

from analyzer.corpus import language_name, script_name
from analyzer.identity import VocabKind
from analyzer.metrics.answer import premium_text

LOW, HIGH = 0.5, 8.0
"""The colour scale's ends: half the pivot's tokens (blue) to eight times (dark red)."""
ABOVE = [(0.0, (255, 255, 255)), (1 / 3, (253, 212, 158)), (2 / 3, (252, 141, 89)),
         (1.0, (179, 0, 0))]
BELOW = [(0.0, (255, 255, 255)), (1.0, (67, 147, 195))]
"""Colour stops from 1x outwards, on log2 of the premium."""

ANSWER_STYLE = """
.answer .scroll { max-height: min(62vh, 560px); overflow: auto; border: 1px solid #ddd; }
.answer table { margin: 0; border-collapse: separate; border-spacing: 0; }
.answer thead th { position: sticky; top: 0; background: #fff; z-index: 2;
                   border-bottom: 2px solid #999; white-space: nowrap; }
.answer tbody th { position: sticky; left: 0; background: #fff; z-index: 1; text-align: left;
                   font-weight: normal; white-space: nowrap; }
.answer thead th:first-child { left: 0; z-index: 3; }
.answer td { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.answer td.dark { color: #fff; }
.answer td.script { text-align: left; color: #555; font-size: .8rem; }
.answer th, .answer td { padding: .2rem .45rem; }
.tools { display: flex; gap: 1rem; align-items: center; flex-wrap: wrap; margin: .4rem 0;
         font-size: .9rem; }
.legend { display: inline-flex; align-items: center; gap: .3rem; }
.legend .bar { display: inline-block; width: 12rem; height: .8rem; border: 1px solid #ccc;
               background: linear-gradient(to right, rgb(67,147,195), #fff 20%, rgb(253,212,158)
               40%, rgb(252,141,89) 60%, rgb(179,0,0)); }
table.data th[data-sort] { cursor: pointer; }
table.data th[aria-sort=descending]::after { content: " \\25BE"; }
table.data th[aria-sort=ascending]::after { content: " \\25B4"; }
"""


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


def answer_table(table: pd.DataFrame, pivot: str) -> str:
    """The languages by vocabulary table (`premium_table`'s rows), highest median premium
    first; each cell's title says its interval and tokens."""
    columns = list(dict.fromkeys(table["column"]))
    wide = table.pivot(index="lang", columns="column", values="premium")[columns]
    medians = wide.median(axis=1)
    order = medians.sort_values(ascending=False, kind="stable").index
    by_cell = table.set_index(["lang", "column"])
    kinds = dict(zip(table["column"], table["kind"]))
    heads = "".join(f"<th data-sort='number' scope='col' "
                    f"title='{escape(VocabKind(kinds[column]).about.label, quote=True)}'>"
                    f"{escape(column)}</th>" for column in columns)
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
                     f"of {language_name(pivot)}{interval}; {int(row['tokens']):,} tokens")
            bounds = "" if pd.isna(low) else f" data-lo='{low:.4f}' data-hi='{high:.4f}'"
            cells.append(f"<td data-v='{premium:.4f}' data-t='{int(row['tokens'])}'{bounds} "
                         f"style='background:{color}' class='{'dark' if dark else ''}' "
                         f"title='{escape(title, quote=True)}'>{premium_text(premium)}</td>")
        rows.append(f"<tr data-lang='{escape(lang, quote=True)}'>"
                    f"<th scope='row' data-v='{escape(language_name(lang), quote=True)}'>"
                    f"{escape(language_name(lang))} <span class='muted'>{escape(lang)}</span></th>"
                    f"<td class='script' data-v='{escape(script_name(lang), quote=True)}'>"
                    f"{escape(script_name(lang))}</td>"
                    f"<td data-v='{medians[lang]:.4f}'>{premium_text(medians[lang])}</td>"
                    f"{''.join(cells)}</tr>")
    return (f"<div class='answer'><div class='tools'>"
            f"<label><input type='checkbox' class='by-script'> group by script</label>"
            f"<button type='button' class='csv' data-table='answer-table'>Download CSV</button>"
            f"<span class='legend'>{premium_text(LOW)} <span class='bar'></span> "
            f"{premium_text(HIGH)} the tokens of <span class='reference'>"
            f"{escape(language_name(pivot))}</span>, log scale; "
            + ("trained vocabularies at their largest size; "
               if any(not VocabKind(kind).measured for kind in kinds.values()) else "")
            + "hover a cell for its interval</span></div>"
            f"<div class='scroll'><table class='data' id='answer-table'>"
            f"<thead><tr><th data-sort='text' scope='col'>language</th>"
            f"<th data-sort='text' scope='col'>script</th>"
            f"<th data-sort='number' scope='col' aria-sort='descending' title='the median of the "
            f"row: half the vocabularies and tokenizers charge the language more'>median</th>"
            f"{heads}</tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table></div></div>")


TABLE_SCRIPT = """
(function () {
  // Every table.data: a click on a heading sorts by that column (again: the other way), and
  // its CSV button downloads what it holds (each cell's data-v, else its text).
  function value(cell, type) {
    var raw = cell.hasAttribute('data-v') ? cell.getAttribute('data-v') : cell.textContent.trim();
    if (type !== 'number') return raw.toLowerCase();
    var n = parseFloat(raw.replace(/[$,x%\u25b2\\s]/g, ''));
    return isNaN(n) ? -Infinity : n;
  }
  function byScript(table) {  // the table's own 'group by script' box, if it has one
    var box = table.closest('.answer');
    return box && box.querySelector('.tools input.by-script');
  }
  function sortBy(table, index, type, descending) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = value(a.cells[index], type), y = value(b.cells[index], type);
      return (x < y ? -1 : x > y ? 1 : 0) * (descending ? -1 : 1);
    });
    var grouped = byScript(table);
    var script = Array.prototype.findIndex.call(table.tHead.rows[0].cells,
      function (th) { return th.textContent.trim() === 'script'; });
    if (grouped && grouped.checked && script >= 0) {
      rows.sort(function (a, b) {  // stable: the chosen order within each script
        var x = value(a.cells[script], 'text'), y = value(b.cells[script], 'text');
        return x < y ? -1 : x > y ? 1 : 0;
      });
    }
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      if (i === index) th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
      else th.removeAttribute('aria-sort');
    });
  }
  function csv(table) {
    function quoted(text) { return /[",\\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text; }
    var lines = Array.prototype.map.call(table.rows, function (row) {
      return Array.prototype.map.call(row.cells, function (cell) {
        var text = row.parentNode.tagName === 'THEAD' || !cell.hasAttribute('data-v')
          ? cell.textContent.trim() : cell.getAttribute('data-v');
        return quoted(text);
      }).join(',');
    });
    return lines.join('\\n') + '\\n';
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.data'), function (table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, index) {
      if (!th.hasAttribute('data-sort')) {  // a number column if its first cell reads as one
        var first = table.tBodies[0].rows[0];
        th.setAttribute('data-sort', first && first.cells[index] &&
          value(first.cells[index], 'number') !== -Infinity ? 'number' : 'text');
      }
      th.tabIndex = 0;
      function go() {
        var descending = th.getAttribute('aria-sort') !== 'descending';
        sortBy(table, index, th.getAttribute('data-sort'), descending);
      }
      th.addEventListener('click', go);
      th.addEventListener('keydown', function (e) { if (e.key === 'Enter') go(); });
    });
    var button = document.querySelector('button.csv[data-table="' + table.id + '"]');
    if (!button) {
      button = document.createElement('button');
      button.type = 'button'; button.className = 'csv'; button.textContent = 'Download CSV';
      table.parentNode.insertBefore(button, table.nextSibling);
    }
    button.addEventListener('click', function () {
      var link = document.createElement('a');
      link.href = URL.createObjectURL(new Blob([csv(table)], {type: 'text/csv'}));
      link.download = (table.id || 'table') + '.csv';
      document.body.appendChild(link); link.click(); link.remove();
    });
    var grouped = byScript(table);
    if (grouped) grouped.addEventListener('change', function () {
      var sorted = Array.prototype.findIndex.call(heads, function (th) {
        return th.hasAttribute('aria-sort'); });
      var at = sorted < 0 ? 2 : sorted;
      sortBy(table, at, heads[at].getAttribute('data-sort'),
             heads[at].getAttribute('aria-sort') !== 'ascending');
    });
  });
})();
"""
