"""A results page: one run's production tokenizers on every language, as a data file a
documentation site keeps (`results.json`: every premium with its interval, each tokenizer's
framing and the models it prices, with the corpus's digest, each tokenizer's files' SHA-256 and
the analyzer's version) and a page that shows it as a sortable table (`index.html`, offline, no
script from elsewhere), beside the run's interactive report.

    analyzer results RUN --out docs/results/flores200-devtest
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd

from analyzer.corpus import language_name, script_name
from analyzer.export import rows as export_rows
from analyzer.files import write_atomically
from analyzer.metrics import (
    VERDICT_COLUMNS,
    RunResults,
    counting_convention,
    estimators_note,
    load_run_data,
    premium_text,
    takeaways,
    tokenizer_label,
    tokenizer_models,
)
from analyzer.metrics.frames import measured_kinds
from analyzer.queries import complete_run
from analyzer.store import AnalyzerDatabase, get_corpus_by_id
from analyzer.version import __version__

from .answer import ABOVE, BELOW, HIGH, LOW, answer_table, cell_color
from .calculator import bill_data, calculator, reference_tools
from .downloads import file_name, heading, number, plain_number, table_attributes
from .files import inline_scripts, inline_styles, page_data, without_local_paths
from .glossary import glossary
from .language_filter import language_names
from .page import write_report

DATA_FILE = "results.json"
PAGE_FILE = "index.html"
REPORT_FILE = "report.html"
SHA256 = re.compile(r"SHA-256 ([0-9a-f]{64})")


def results_document(db: AnalyzerDatabase, run_id: int, prices: Path | None = None,
                     results: RunResults | None = None, full_paths: bool = False) -> dict:
    """The run's production tokenizers on every language, with what makes the numbers
    checkable: the corpus's content digest, each tokenizer's files' SHA-256, the analyzer's
    version and the counting convention (`results`: the run's, already loaded). Files are
    named without this machine's folders, unless `full_paths`."""

    def where(source: str | None) -> str:
        return (source or "") if full_paths else without_local_paths(source or "")

    run = complete_run(db, run_id)
    results = results or RunResults(load_run_data(db, run_id))
    corpus = get_corpus_by_id(db, run.corpus_id)
    frame = results.frame
    rows = frame[frame["kind"].isin(measured_kinds())]
    if rows.empty:
        raise ValueError(f"run {run_id} measured no production tokenizer: run it with "
                         "--tokenizer all-available")
    vocabularies = [v for v in results.data.vocabularies if v.kind.measured]
    costs = results.model_costs(prices)
    verdicts = results.verdicts()  # the run's own, as every face says them
    return {
        "analyzer": __version__, "engine": run.engine_version, "run": run.id,
        "corpus": {"name": corpus.name, "source": where(corpus.source),
                   "format": corpus.format,
                   "content_sha256": corpus.content_hash, "units": len(run.measured_units),
                   "languages": len(run.languages)},
        "pivot": run.pivot, "counted_as": counting_convention(run),
        "estimators": estimators_note(run, "in each cell's hover and this file's unit_premium"),
        "tokenizers": [{"name": v.scope, "kind": str(v.kind), "size": v.size, "library": v.library,
                        "models": tokenizer_models(v.scope) if v.kind.production else [],
                        "sha256": SHA256.findall(v.source or ""),
                        "source": where(v.source),
                        "framing": v.framing, "framing_basis": v.framing_basis}
                       for v in vocabularies],
        "models": [{"model": model, "tokenizer": part["tokenizer"].iloc[0],
                    "provider": part["provider"].iloc[0],
                    "input_price": float(part["input_price"].iloc[0]),
                    "output_price": float(part["output_price"].iloc[0]),
                    "price_date": part["date"].iloc[0], "price_source": part["source"].iloc[0]}
                   for model, part in costs.groupby("model", sort=False)],
        "rows": [_row(row) for row in rows.itertuples()],
        "verdicts": {"said": verdicts.sentences(),
                     "candidates": export_rows(verdicts.rows(), VERDICT_COLUMNS)},
    }


def _row(row) -> dict:
    def number(value) -> float | None:
        return None if pd.isna(value) else round(float(value), 6)

    return {"lang": row.lang, "language": language_name(row.lang), "tokenizer": row.vocab,
            "tokens": int(row.tokens), "premium": number(row.premium),
            "premium_ci_low": number(row.premium_ci_low),
            "premium_ci_high": number(row.premium_ci_high),
            "unit_premium": number(row.unit_premium),
            "unit_premium_ci_low": number(row.unit_premium_ci_low),
            "unit_premium_ci_high": number(row.unit_premium_ci_high),
            "bytes_per_token": number(row.bytes_per_token),
            "word_split_pct": number(row.word_split_pct)}


def replaced_by_results(out: Path) -> list[Path]:
    """The files in `out` that writing results there would replace (its index.html may be a
    site's own page: replacing it needs to be asked for)."""
    return [out / name for name in (PAGE_FILE, DATA_FILE, REPORT_FILE) if (out / name).exists()]


def write_results(db: AnalyzerDatabase, run_id: int, out: Path,
                  prices: Path | None = None, *, replace: bool = False,
                  full_paths: bool = False) -> list[Path]:
    """Write the data file, its page and the run's interactive report (self-contained: the
    folder works alone) into `out`; the paths written. ValueError, before anything is written,
    when `out` already holds one of them and `replace` is not given."""
    existing = replaced_by_results(out)
    if existing and not replace:
        raise ValueError(f"{out} already holds {', '.join(p.name for p in existing)}, which "
                         "the results would replace; give another folder, or --replace")
    results = RunResults(load_run_data(db, run_id))  # loaded once, for the data and the report
    document = results_document(db, run_id, prices, results, full_paths)
    shown = results_page(document)  # made before anything is written: a failure writes nothing
    out.mkdir(parents=True, exist_ok=True)
    # The report first: it writes an index of runs as index.html, which the page replaces.
    report = write_report(db, run_id, out, self_contained=True, prices=prices, results=results,
                          full_paths=full_paths, index_label="The results page")
    target = out / REPORT_FILE
    report.replace(target)
    data = out / DATA_FILE
    write_atomically(data, json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    page = out / PAGE_FILE
    write_atomically(page, shown)
    return [data, page, target]


def script_summary(rows: pd.DataFrame, pivot: str) -> pd.DataFrame:
    """Per script and tokenizer: how many languages, the median premium and the highest (and
    whose), the pivot left out."""
    others = rows[rows["lang"] != pivot].assign(script=lambda f: f["lang"].map(script_name))
    found = []
    for (script, tokenizer), part in others.groupby(["script", "tokenizer"], sort=True):
        worst = part.loc[part["premium"].idxmax()]
        found.append({"script": script, "tokenizer": tokenizer, "languages": len(part),
                      "median": part["premium"].median(), "highest": worst["premium"],
                      "paid_most_by": language_name(worst["lang"])})
    return pd.DataFrame(found)


TERMS_PLACE = "<!-- terms -->"
"""Where the results page's terms go, once the rest of it is written (`glossary` defines the
terms the page uses)."""


def results_page(document: dict) -> str:
    """The data file as a page to publish: the answer table (a language per row, a tokenizer
    per column, each cell its premium coloured on a log scale), which sorts, groups by script,
    shows intervals, recomputes against another reference language, finds a language, hides a
    tokenizer, compares two tokenizers and downloads as CSV; the bill calculator; a summary per
    script; the tokenizers, the priced models and the corpus, named by name and digest."""
    rows = pd.DataFrame(document["rows"])
    pivot = document["pivot"]
    names = [t["name"] for t in document["tokenizers"]]
    run = document["run"]
    table = rows.rename(columns={"tokenizer": "column"}).assign(
        vocab=lambda f: f["column"],
        kind=lambda f: f["column"].map({t["name"]: t.get("kind", "production")
                                        for t in document["tokenizers"]}))
    summary = script_summary(rows, pivot)
    summary_rows = ""
    for script, part in (summary.groupby("script", sort=True) if not summary.empty else []):
        by_name = part.set_index("tokenizer")
        cells = []
        for name in names:
            if name not in by_name.index:
                cells.append("<td data-v=''>&ndash;</td>")
                continue
            row = by_name.loc[name]
            color, dark = cell_color(row["median"])
            cells.append(f"<td data-v='{plain_number(row['median'])}' style='background:{color}' "
                         f"class='{'dark' if dark else ''}' title='highest "
                         f"{premium_text(row['highest'])}, {html.escape(row['paid_most_by'], quote=True)}'>"
                         f"{premium_text(row['median'])}</td>")
        summary_rows += (f"<tr><th scope='row'>{html.escape(script)}</th>"
                         f"<td>{int(part['languages'].iloc[0])}</td>{''.join(cells)}</tr>")
    summary_heads = "".join(heading(name, f"median_premium_{name}", " scope='col'")
                            for name in names)
    tokenizers = "".join(
        f"<tr><td data-v='{html.escape(t['name'], quote=True)}'>"
        f"{html.escape(tokenizer_label(t['name']))}</td>"
        f"<td>{html.escape('; '.join(t.get('models', [])))}</td>"
        f"{number(t['size'], format(t['size'], ','))}<td>"
        f"{html.escape(t['library'] or '')}</td>"
        f"<td>{'' if t['framing'] is None else t['framing']}</td>"
        f"<td>{html.escape(t['framing_basis'] or '')}</td>"
        f"<td data-v='{html.escape(' '.join(t['sha256']), quote=True)}'><code>"
        f"{'<br>'.join(html.escape(d) for d in t['sha256'])}</code></td></tr>"
        for t in document["tokenizers"])
    models = "".join(
        f"<tr><td>{html.escape(m['model'])}</td><td>{html.escape(m['tokenizer'])}</td>"
        f"{number(m['input_price'], 'US$' + format(m['input_price'], 'g'))}"
        f"{number(m['output_price'], 'US$' + format(m['output_price'], 'g'))}"
        f"<td>{html.escape(m['price_date'])}</td></tr>" for m in document["models"])
    corpus = document["corpus"]
    home = html.escape(language_name(pivot))
    counted = html.escape(document["counted_as"])
    choices = "".join(f"<option value='{html.escape(name, quote=True)}'>"
                      f"{html.escape(tokenizer_label(name))}</option>" for name in names)
    # The colour scale is the answer table's own (`answer.cell_color`), given to the script.
    # The calculator's models: each priced one with its tokenizer's framing (`bill`'s).
    framing = {t["name"]: t["framing"] for t in document["tokenizers"]}
    priced = bill_data([{"model": m["model"], "tokenizer": m["tokenizer"],
                         "input_price": m["input_price"], "date": m["price_date"],
                         "framing": framing.get(m["tokenizer"])} for m in document["models"]],
                       [t["name"] for t in document["tokenizers"]
                        if t.get("kind", "production") == "production"])
    data = page_data({"pivot": pivot, "names": language_names(sorted(set(rows["lang"]))),
                      "scale": {"low": LOW, "high": HIGH, "above": ABOVE, "below": BELOW},
                      "bill": priced})
    sentences = "".join(f"<p class='lead'>{html.escape(s)}</p>"
                        for s in takeaways(table.assign(column=table["column"]), pivot))
    sentences = f"<div id='said'>{sentences}</div>" + "".join(
        f"<p class='lead verdict'>{html.escape(s)}</p>" for s in document.get("verdicts", {}).get("said", []))
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Token premiums on {html.escape(corpus['name'])}</title>
{inline_styles("report.css", "answer.css", "results.css")}</head><body>
<h1>What each language pays: {html.escape(corpus['name'])}</h1>
{sentences}
<div class="tools">
<label><input type="checkbox" id="intervals"> show 95 % intervals
<span class="muted" id="intervals-said"></span></label>
<a href="{DATA_FILE}" download>Download JSON</a>
<a href="{REPORT_FILE}">the interactive report</a>
</div>
{reference_tools(list(rows["lang"]), pivot, names)}
{answer_table(table, pivot, run)}
<p class="muted">A premium is a language's tokens over the reference language's for the same
content ({corpus['units']:,} units in each of {corpus['languages']} languages), counted as
{counted}. Intervals are 95 % bootstrap intervals over the units, against {home}.
{html.escape(document['estimators'])}</p>
{calculator(priced["counters"])}
<h2>Two tokenizers side by side</h2>
<div class="tools compare"><label>x <select id="compare-x">{choices}</select></label>
<label>y <select id="compare-y">{choices}</select></label>
<span class="muted" id="compare-said"></span></div>
<div class="compare"><svg id="scatter" width="560" height="420" role="img"
 aria-label="each language's premium under two tokenizers"></svg></div>
<details><summary>Their ratio, language by language</summary>
<div class="answer"><div class="scroll"><table class="data numbers" id="ratios"
{table_attributes(file_name(run, "two-tokenizers-vs-{reference}"), run, pivot)}><thead><tr>
<th scope="col" data-csv="language">language</th><th scope="col" id="ratio-x">x</th>
<th scope="col" id="ratio-y">y</th><th scope="col" id="ratio-y-x" data-csv="ratio_y_over_x">y / x</th>
</tr></thead><tbody></tbody></table></div></div></details>
<h2>By script</h2>
<p class="muted">Each script's median premium under each tokenizer (the highest, and who pays
it, in a cell's title), against {home}.</p>
<div class="answer"><div class="scroll"><table class="data" id="by-script"
{table_attributes(file_name(run, f"by-script-vs-{pivot}"), run, pivot)}><thead><tr>
<th scope="col" data-csv="script">script</th>
<th scope="col" data-csv="languages">languages ({home} aside)</th>{summary_heads}</tr></thead>
<tbody>{summary_rows}</tbody></table></div></div>
<h2>Tokenizers</h2>
<table class="data" id="tokenizers"{table_attributes(file_name(run, "tokenizers"), run, None)}>
<thead><tr><th data-csv="tokenizer">tokenizer</th><th data-csv="models">models</th>
<th data-csv="vocab_size">tokens</th><th data-csv="library">library</th>
<th data-csv="framing_tokens">framing</th><th data-csv="framing_basis">framing known by</th>
<th data-csv="files_sha256">files' SHA-256</th></tr></thead>
<tbody>{tokenizers}</tbody></table>
<h2>Priced models</h2>
<table class="data" id="models"{table_attributes(file_name(run, "priced-models"), run, None)}>
<thead><tr><th data-csv="model">model</th><th data-csv="tokenizer">tokenizer</th>
<th data-csv="input_usd_per_million_tokens">input, US$ per 1M tokens</th>
<th data-csv="output_usd_per_million_tokens">output, US$ per 1M tokens</th>
<th data-csv="price_date">price as of</th></tr></thead>
<tbody>{models}</tbody></table>
<h2>Terms</h2>
{TERMS_PLACE}
<p>Corpus {html.escape(corpus['name'])}{': ' + html.escape(corpus['source']) if corpus['source'] else ''}
({html.escape(corpus['format'])}), content SHA-256 <code>{html.escape(corpus['content_sha256'])}</code>;
analyzer {html.escape(document['analyzer'])}, run {document['run']}.</p>
{data}
{inline_scripts("page-data.js", "tables.js", "reference.js", "results.js", "bill.js")}
</body></html>
"""
    return page.replace(TERMS_PLACE, glossary(page), 1)  # the terms the page uses
