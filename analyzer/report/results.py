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

from analyzer import __version__
from analyzer.corpus import language_name
from analyzer.files import write_atomically
from analyzer.metrics import RunResults, counting_convention, load_run_data
from analyzer.metrics.frames import measured_kinds
from analyzer.queries import complete_run
from analyzer.store import AnalyzerDatabase, get_corpus_by_id

from .files import without_local_paths
from .page import write_report

DATA_FILE = "results.json"
PAGE_FILE = "index.html"
REPORT_FILE = "report.html"
SHA256 = re.compile(r"SHA-256 ([0-9a-f]{64})")


def results_document(db: AnalyzerDatabase, run_id: int, prices: Path | None = None,
                     results: RunResults | None = None) -> dict:
    """The run's production tokenizers on every language, with what makes the numbers
    checkable: the corpus's content digest, each tokenizer's files' SHA-256, the analyzer's
    version and the counting convention (`results`: the run's, already loaded)."""
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
    return {
        "analyzer": __version__, "engine": run.engine_version, "run": run.id,
        "corpus": {"name": corpus.name, "source": without_local_paths(corpus.source or ""),
                   "format": corpus.format,
                   "content_sha256": corpus.content_hash, "units": len(run.measured_units),
                   "languages": len(run.languages)},
        "pivot": run.pivot, "counted_as": counting_convention(run),
        "tokenizers": [{"name": v.scope, "size": v.size, "library": v.library,
                        "sha256": SHA256.findall(v.source or ""),
                        "source": without_local_paths(v.source or ""),
                        "framing": v.framing, "framing_basis": v.framing_basis}
                       for v in vocabularies],
        "models": [{"model": model, "tokenizer": part["tokenizer"].iloc[0],
                    "provider": part["provider"].iloc[0],
                    "input_price": float(part["input_price"].iloc[0]),
                    "output_price": float(part["output_price"].iloc[0]),
                    "price_date": part["date"].iloc[0], "price_source": part["source"].iloc[0]}
                   for model, part in costs.groupby("model", sort=False)],
        "rows": [_row(row) for row in rows.itertuples()],
    }


def _row(row) -> dict:
    def number(value) -> float | None:
        return None if pd.isna(value) else round(float(value), 6)

    return {"lang": row.lang, "language": language_name(row.lang), "tokenizer": row.vocab,
            "tokens": int(row.tokens), "premium": number(row.premium),
            "premium_ci_low": number(row.premium_ci_low),
            "premium_ci_high": number(row.premium_ci_high),
            "bytes_per_token": number(row.bytes_per_token),
            "word_split_pct": number(row.word_split_pct)}


def replaced_by_results(out: Path) -> list[Path]:
    """The files in `out` that writing results there would replace (its index.html may be a
    site's own page: replacing it needs to be asked for)."""
    return [out / name for name in (PAGE_FILE, DATA_FILE, REPORT_FILE) if (out / name).exists()]


def write_results(db: AnalyzerDatabase, run_id: int, out: Path,
                  prices: Path | None = None, *, replace: bool = False) -> list[Path]:
    """Write the data file, its page and the run's interactive report (self-contained: the
    folder works alone) into `out`; the paths written. ValueError, before anything is written,
    when `out` already holds one of them and `replace` is not given."""
    existing = replaced_by_results(out)
    if existing and not replace:
        raise ValueError(f"{out} already holds {', '.join(p.name for p in existing)}, which "
                         "the results would replace; give another folder, or --replace")
    results = RunResults(load_run_data(db, run_id))  # loaded once, for the data and the report
    document = results_document(db, run_id, prices, results)
    out.mkdir(parents=True, exist_ok=True)
    # The report first: it writes an index of runs as index.html, which the page replaces.
    report = write_report(db, run_id, out, self_contained=True, prices=prices, results=results,
                          published=True)
    target = out / REPORT_FILE
    report.replace(target)
    data = out / DATA_FILE
    write_atomically(data, json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    page = out / PAGE_FILE
    write_atomically(page, results_page(document))
    return [data, page, target]


def results_page(document: dict) -> str:
    """The data file as a page: a language per row, a tokenizer per column, each cell its
    premium (the interval in its title); a click on a heading sorts by it."""
    rows = pd.DataFrame(document["rows"])
    names = [t["name"] for t in document["tokenizers"]]
    table = rows.pivot(index="lang", columns="tokenizer", values="premium")[names]
    low = rows.pivot(index="lang", columns="tokenizer", values="premium_ci_low")[names]
    high = rows.pivot(index="lang", columns="tokenizer", values="premium_ci_high")[names]
    table = table.sort_values(names[0])
    body = []
    for lang in table.index:
        cells = []
        for name in names:
            value, lo, hi = table.loc[lang, name], low.loc[lang, name], high.loc[lang, name]
            shown = "" if pd.isna(value) else f"{value:.2f}"
            title = "" if pd.isna(lo) else f' title="95 % interval {lo:.3f} to {hi:.3f}"'
            cells.append(f'<td data-value="{"" if pd.isna(value) else value}"{title}>{shown}</td>')
        body.append(f'<tr><td>{html.escape(language_name(lang))}</td><td><code>{html.escape(lang)}'
                    f'</code></td>{"".join(cells)}</tr>')
    heads = "".join(f"<th>{html.escape(name)}</th>" for name in names)
    tokenizers = "".join(
        f"<tr><td>{html.escape(t['name'])}</td><td>{t['size']:,}</td><td>"
        f"{html.escape(t['library'] or '')}</td><td>{'' if t['framing'] is None else t['framing']}"
        f" {html.escape(t['framing_basis'] or '')}</td><td><code>"
        f"{'<br>'.join(html.escape(d) for d in t['sha256'])}</code></td></tr>"
        for t in document["tokenizers"])
    models = "".join(
        f"<tr><td>{html.escape(m['model'])}</td><td>{html.escape(m['tokenizer'])}</td>"
        f"<td>${m['input_price']:g}</td><td>${m['output_price']:g}</td>"
        f"<td>{html.escape(m['price_date'])}</td></tr>" for m in document["models"])
    corpus = document["corpus"]
    pivot = html.escape(language_name(document["pivot"]))
    counted = html.escape(document["counted_as"])
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Token premiums on {html.escape(corpus['name'])}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; max-width: 80rem; }}
table {{ border-collapse: collapse; margin: 1rem 0; }}
th, td {{ border-bottom: 1px solid #ddd; padding: .25rem .6rem; text-align: right; }}
td:first-child, th:first-child, td:nth-child(2) {{ text-align: left; }}
th {{ cursor: pointer; background: #f4f4f4; position: sticky; top: 0; }}
</style></head><body>
<h1>What each language pays: {html.escape(corpus['name'])}</h1>
<p>The premium of a language under a tokenizer is its tokens over {pivot}'s for the same
content ({corpus['units']:,} units in each of {corpus['languages']} languages); a cell's title
gives its 95 % bootstrap interval. Click a heading to sort by it. Counted as {counted}.
<a href="{REPORT_FILE}">The interactive report</a> has the charts;
<a href="{DATA_FILE}">the data file</a> every number.</p>
<table id="premiums"><thead><tr><th>language</th><th>code</th>{heads}</tr></thead>
<tbody>{"".join(body)}</tbody></table>
<h2>Tokenizers</h2>
<table><thead><tr><th>tokenizer</th><th>tokens</th><th>library</th><th>framing</th>
<th>files' SHA-256</th></tr></thead>
<tbody>{tokenizers}</tbody></table>
<h2>Priced models</h2>
<table><thead><tr><th>model</th><th>tokenizer</th><th>input, per 1M tokens</th><th>output</th>
<th>price as of</th></tr></thead>
<tbody>{models}</tbody></table>
<p>Corpus {html.escape(corpus['source'])} ({html.escape(corpus['format'])}), content SHA-256
<code>{html.escape(corpus['content_sha256'])}</code>; analyzer {html.escape(document['analyzer'])},
run {document['run']}.</p>
<script>
document.querySelectorAll("#premiums th").forEach((th, column) => {{
  th.addEventListener("click", () => {{
    const body = th.closest("table").tBodies[0];
    const up = th.dataset.order !== "up";
    th.dataset.order = up ? "up" : "down";
    const key = (row) => {{
      const cell = row.cells[column];
      return cell.dataset.value !== undefined ? parseFloat(cell.dataset.value || "NaN") : cell.textContent;
    }};
    [...body.rows].sort((a, b) => {{
      const x = key(a), y = key(b);
      const order = typeof x === "number" ? (isNaN(x) ? 1 : isNaN(y) ? -1 : x - y) : x.localeCompare(y);
      return up ? order : -order;
    }}).forEach((row) => body.appendChild(row));
  }});
}});
</script>
</body></html>
"""
