"""What the report and the results page put beside their answer table so a reader can work it
offline: the tools that recompute it (a reference language, a search over the languages, a box
per column; static/reference.js), and the bill calculator (static/bill.js), which prices a
month's workload on each priced model as `analyzer show --bill` does
(`analyzer.metrics.bill`), from the table's tokens and the models given in the page data.
"""

from __future__ import annotations

from html import escape

import pandas as pd

from analyzer.corpus import language_name
from analyzer.metrics import tokenizer_label


def reference_tools(languages: list[str], pivot: str, columns: list[str],
                    search: bool = True) -> str:
    """The answer table's reference language (the pivot chosen), its search box (not on a
    report with a language filter, which already finds languages in every table) and a box
    per column (`columns`: each heading's data-csv) that shows or hides it."""
    options = "".join(f"<option value='{escape(lang, quote=True)}'"
                      f"{' selected' if lang == pivot else ''}>{escape(language_name(lang))}"
                      "</option>" for lang in sorted(set(languages), key=language_name))
    boxes = "".join(f"<label><input type='checkbox' class='show-column' checked "
                    f"value='{escape(column, quote=True)}'> {escape(column)}</label> "
                    for column in columns)
    return (f"<div class='tools'><label>reference language <select id='reference'>{options}"
            f"</select></label> "
            + ("<label>find a language <input type='search' id='answer-search' "
               "placeholder='name or code'></label> " if search else "")
            + f"<details class='columns'><summary>columns shown</summary>{boxes}</details></div>")


def bill_data(models: list[dict], production: list[str]) -> dict:
    """The calculator's part of the page data: each priced model (`model`, `tokenizer`,
    `input_price`, `date`, `framing`: tokens a request adds, None when not known), in the price
    table's order as `bill` takes them, and the tokenizers that can count a workload: the
    run's production tokenizers (in order) that a price uses, the first the default as
    `workload_of` chooses it."""
    priced = {m["tokenizer"] for m in models}
    return {"models": models, "counters": [name for name in production if name in priced]}


def models_of(costs: pd.DataFrame, framing: dict) -> list[dict]:
    """`bill_data`'s models from a run's `model_costs` rows (a row per model and language)
    and its tokenizers' `request_framing`."""
    return [{"model": model, "tokenizer": part["tokenizer"].iloc[0],
             "input_price": float(part["input_price"].iloc[0]), "date": str(part["date"].iloc[0]),
             "framing": framing.get(part["tokenizer"].iloc[0], (None, None))[0]}
            for model, part in costs.groupby("model", sort=False)] if len(costs) else []


def calculator(counters: list[str]) -> str:
    """The calculator's form and where its answer goes (nothing without a priced tokenizer)."""
    if not counters:
        return ""
    options = "".join(f"<option value='{escape(name, quote=True)}'>"
                      f"{escape(tokenizer_label(name))}</option>" for name in counters)
    return (
        # folded: a reader opens it; the report's first screens stay the answer's
        "<details class='bill' id='bill'><summary><strong>What a month costs on each "
        "model</strong> (a calculator)</summary>"
        "<p class='muted'>A month's content in the reference language of the run, as one "
        "tokenizer counts it, shared among the languages as the mix says (LANG=SHARE pairs, "
        "any positive weights; empty: every language alike), priced at each model's input "
        "price. The 95 % intervals are in <code>analyzer show RUN --bill</code>.</p>"
        "<div class='tools'><label>tokens a month <input id='bill-tokens' value='1M' size='8'>"
        "</label> <label>counted by <select id='bill-counted-by'>"
        f"{options}</select></label> <label>requests a month <input id='bill-requests' "
        "value='0' size='8'></label></div><div class='tools'><label>mix <input id='bill-mix' "
        "size='60' placeholder='eng_Latn=0.6,hin_Deva=0.4'></label> "
        "<button type='button' id='bill-go'>Price it</button></div>"
        "<p id='bill-said' aria-live='polite'></p>"
        "<table class='numbers' id='bill-table' hidden><thead><tr>"
        "<th scope='col' data-csv='model'>model</th><th scope='col' data-csv='tokenizer'>"
        "tokenizer</th><th scope='col' data-csv='tokens'>tokens a month</th>"
        "<th scope='col' data-csv='cost'>US$ a month</th><th scope='col' "
        "data-csv='vs_cheapest'>vs cheapest</th></tr></thead><tbody></tbody></table></details>")
