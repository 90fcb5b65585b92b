"""What a page's tables download as CSV (static/tables.js writes the file in the browser).

A CSV leaves the page and is read on its own, in a spreadsheet or by pandas, so each says
what it holds without the page around it:

- its file name: the run and the table, `run-3-premiums-vs-eng_Latn.csv`,
  `run-3-cost-GPT-4o.csv`, unique on its page (`file_name`);
- its columns by codes and units (a heading's `data-csv`: `tokens`, `input_cost_usd`,
  `premium_vs_reference`), the row's language code as `lang` beside its name (`language`);
- its reference language and run as columns on every row, `reference` and `run`, with any
  other constant the table's rows share (the model, its tokenizer): columns rather than a
  leading comment line, which a CSV reader takes for a row (`table_attributes`);
- each number plain (a cell's `data-v`: no thousands separators, currency signs or `x`), at
  full precision (the browser's own ratios too, as `String` writes them).

The page's own reference may change in the browser (the results page's selector): the file name
then follows it, its `{reference}` filled from the table's `data-reference`.
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Mapping
from html import escape


def file_name(run: int, what: str) -> str:
    """A download's file name: the run, then what the table holds, in letters, digits, `.`,
    `_` and `-` only (a model's name made so), `{reference}` kept for the browser to fill.

    >>> file_name(3, "premiums-vs-{reference}"), file_name(3, "cost GPT-4o mini")
    ('run-3-premiums-vs-{reference}.csv', 'run-3-cost-GPT-4o-mini.csv')
    """
    parts = re.split(r"(\{reference\})", what)
    cleaned = "".join(part if part == "{reference}" else
                      re.sub(r"[^A-Za-z0-9._]+", "-", part) for part in parts)
    return f"run-{run}-{cleaned.strip('-')}.csv"


def table_attributes(file: str, run: int, reference: str | None,
                     columns: Mapping[str, object] | None = None) -> str:
    """The attributes of a `table.data` that name its CSV: `data-file`, `data-run`,
    `data-reference` (none for a table no premium or ratio of which is over a language) and
    `data-columns` (a JSON object of further columns, the same on every row), escaped."""
    found = f" data-file='{escape(file, quote=True)}' data-run='{run}'"
    if reference is not None:
        found += f" data-reference='{escape(reference, quote=True)}'"
    if columns:
        found += f" data-columns='{escape(json.dumps(columns, ensure_ascii=False), quote=True)}'"
    return found


def heading(text: str, csv: str, attributes: str = "") -> str:
    """A table heading: `text` shown, `csv` the column's name in the download."""
    return f"<th data-csv='{escape(csv, quote=True)}'{attributes}>{escape(text, quote=False)}</th>"


def plain_number(value: float | int) -> str:
    """A number as a CSV cell holds it: a whole number as one, a float with every digit it has
    (`repr`), a NaN as nothing.

    >>> plain_number(12639), plain_number(0.8776543210987), plain_number(float("nan"))
    ('12639', '0.8776543210987', '')
    """
    if isinstance(value, numbers.Integral):
        return str(int(value))
    return "" if value != value else repr(float(value))


def number(value: float | int, shown: str, attributes: str = "") -> str:
    """A table cell showing `shown` and downloading `value` as a plain number."""
    return f"<td data-v='{plain_number(value)}'{attributes}>{escape(shown, quote=False)}</td>"
