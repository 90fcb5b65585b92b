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
from analyzer.files import write_atomically
from analyzer.metrics import RunResults, counting_convention, load_run_data, premium_text, takeaways
from analyzer.metrics.frames import measured_kinds
from analyzer.queries import complete_run
from analyzer.store import AnalyzerDatabase, get_corpus_by_id
from analyzer.version import __version__

from .answer import ABOVE, ANSWER_STYLE, BELOW, HIGH, LOW, TABLE_SCRIPT, answer_table, cell_color
from .files import STYLE, without_local_paths
from .glossary import glossary
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
    return {
        "analyzer": __version__, "engine": run.engine_version, "run": run.id,
        "corpus": {"name": corpus.name, "source": where(corpus.source),
                   "format": corpus.format,
                   "content_sha256": corpus.content_hash, "units": len(run.measured_units),
                   "languages": len(run.languages)},
        "pivot": run.pivot, "counted_as": counting_convention(run),
        "tokenizers": [{"name": v.scope, "kind": str(v.kind), "size": v.size, "library": v.library,
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


def results_page(document: dict) -> str:
    """The data file as a page to publish: the answer table (a language per row, a tokenizer
    per column, each cell its premium coloured on a log scale), which sorts, groups by script,
    shows intervals, recomputes against another reference language, compares two tokenizers
    and downloads as CSV; a summary per script; the tokenizers, the priced models and the
    corpus, named by name and digest."""
    rows = pd.DataFrame(document["rows"])
    pivot = document["pivot"]
    names = [t["name"] for t in document["tokenizers"]]
    table = rows.rename(columns={"tokenizer": "column"}).assign(
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
            cells.append(f"<td data-v='{row['median']:.4f}' style='background:{color}' "
                         f"class='{'dark' if dark else ''}' title='highest "
                         f"{premium_text(row['highest'])}, {html.escape(row['paid_most_by'], quote=True)}'>"
                         f"{premium_text(row['median'])}</td>")
        summary_rows += (f"<tr><th scope='row'>{html.escape(script)}</th>"
                         f"<td>{int(part['languages'].iloc[0])}</td>{''.join(cells)}</tr>")
    summary_heads = "".join(f"<th scope='col'>{html.escape(name)}</th>" for name in names)
    tokenizers = "".join(
        f"<tr><td>{html.escape(t['name'])}</td><td>{t['size']:,}</td><td>"
        f"{html.escape(t['library'] or '')}</td><td>{'' if t['framing'] is None else t['framing']}"
        f" {html.escape(t['framing_basis'] or '')}</td><td><code>"
        f"{'<br>'.join(html.escape(d) for d in t['sha256'])}</code></td></tr>"
        for t in document["tokenizers"])
    models = "".join(
        f"<tr><td>{html.escape(m['model'])}</td><td>{html.escape(m['tokenizer'])}</td>"
        f"<td>US${m['input_price']:g}</td><td>US${m['output_price']:g}</td>"
        f"<td>{html.escape(m['price_date'])}</td></tr>" for m in document["models"])
    corpus = document["corpus"]
    home = html.escape(language_name(pivot))
    counted = html.escape(document["counted_as"])
    languages = "".join(f"<option value='{html.escape(lang, quote=True)}'"
                        f"{' selected' if lang == pivot else ''}>{html.escape(language_name(lang))}"
                        "</option>" for lang in sorted(set(rows["lang"]), key=language_name))
    choices = "".join(f"<option>{html.escape(name)}</option>" for name in names)
    # The colour scale is the answer table's own (`answer.cell_color`), given to the script.
    scale_json = json.dumps({"low": LOW, "high": HIGH, "above": ABOVE, "below": BELOW})
    names_json = json.dumps({lang: language_name(lang) for lang in set(rows["lang"])}) \
        .replace("</", "<\\/")
    script = (RESULTS_SCRIPT.replace("PIVOT", json.dumps(pivot)).replace("NAMES", names_json)
              .replace("SCALE", scale_json))
    sentences = "".join(f"<p class='lead'>{html.escape(s)}</p>"
                        for s in takeaways(table.assign(column=table["column"]), pivot))
    sentences = f"<div id='said'>{sentences}</div>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Token premiums on {html.escape(corpus['name'])}</title>
<style>{STYLE}{ANSWER_STYLE}
.compare svg {{ border: 1px solid #ddd; background: #fff; }}
</style></head><body>
<h1>What each language pays: {html.escape(corpus['name'])}</h1>
{sentences}
<div class="tools">
<label>reference language <select id="reference">{languages}</select></label>
<label><input type="checkbox" id="intervals"> show 95 % intervals
<span class="muted" id="intervals-said"></span></label>
<a href="{DATA_FILE}" download>Download JSON</a>
<a href="{REPORT_FILE}">the interactive report</a>
</div>
{answer_table(table, pivot)}
<p class="muted">A premium is a language's tokens over the reference language's for the same
content ({corpus['units']:,} units in each of {corpus['languages']} languages), counted as
{counted}. Intervals are 95 % bootstrap intervals over the units, against {home}.</p>
<h2>Two tokenizers side by side</h2>
<div class="tools compare"><label>x <select id="compare-x">{choices}</select></label>
<label>y <select id="compare-y">{choices}</select></label>
<span class="muted" id="compare-said"></span></div>
<div class="compare"><svg id="scatter" width="560" height="420" role="img"
 aria-label="each language's premium under two tokenizers"></svg></div>
<details><summary>Their ratio, language by language</summary>
<div class="answer"><div class="scroll"><table class="data numbers" id="ratios"><thead><tr>
<th scope="col">language</th><th scope="col" id="ratio-x">x</th><th scope="col" id="ratio-y">y</th>
<th scope="col">y / x</th></tr></thead><tbody></tbody></table></div></div></details>
<h2>By script</h2>
<p class="muted">Each script's median premium under each tokenizer (the highest, and who pays
it, in a cell's title), against {home}.</p>
<div class="answer"><div class="scroll"><table class="data" id="by-script"><thead><tr>
<th scope="col">script</th><th scope="col">languages ({home} aside)</th>{summary_heads}</tr></thead>
<tbody>{summary_rows}</tbody></table></div></div>
<h2>Tokenizers</h2>
<table class="data" id="tokenizers"><thead><tr><th>tokenizer</th><th>tokens</th><th>library</th>
<th>framing</th><th>files' SHA-256</th></tr></thead>
<tbody>{tokenizers}</tbody></table>
<h2>Priced models</h2>
<table class="data" id="models"><thead><tr><th>model</th><th>tokenizer</th><th>input, US$ per 1M tokens</th>
<th>output, US$ per 1M tokens</th><th>price as of</th></tr></thead>
<tbody>{models}</tbody></table>
<h2>Terms</h2>
{glossary()}
<p>Corpus {html.escape(corpus['name'])}{': ' + html.escape(corpus['source']) if corpus['source'] else ''}
({html.escape(corpus['format'])}), content SHA-256 <code>{html.escape(corpus['content_sha256'])}</code>;
analyzer {html.escape(document['analyzer'])}, run {document['run']}.</p>
<script>{TABLE_SCRIPT}</script>
<script>{script}</script>
</body></html>
"""


RESULTS_SCRIPT = """
(function () {
  var table = document.getElementById('answer-table');
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var first = 3;  // language, script, median, then a column per tokenizer
  var pivot = PIVOT;
  var names = NAMES;
  var LOW = SCALE.low, HIGH = SCALE.high;
  function color(p) {  // analyzer.report.answer.cell_color, on log2 of the premium
    if (!(p > 0)) return ['#eee', false];
    var above = p >= 1, place = Math.min(Math.abs(Math.log2(p) / Math.log2(above ? HIGH : 1 / LOW)), 1);
    var stops = above ? SCALE.above : SCALE.below;
    for (var i = 1; i < stops.length; i++) {
      if (place <= stops[i][0]) {
        var s = (place - stops[i - 1][0]) / (stops[i][0] - stops[i - 1][0]);
        var rgb = stops[i - 1][1].map(function (a, k) { return Math.round(a + (stops[i][1][k] - a) * s); });
        return ['rgb(' + rgb.join(',') + ')', place > 0.6];
      }
    }
  }
  function rows() { return Array.prototype.slice.call(table.tBodies[0].rows); }
  function text(p) { return isNaN(p) ? 'n/a' : p.toFixed(2) + 'x'; }
  // Premiums against the reference language, from each cell's tokens (data-t).
  function recompute() {
    var reference = document.getElementById('reference').value;
    var intervals = document.getElementById('intervals');
    intervals.disabled = reference !== pivot;
    if (intervals.disabled) intervals.checked = false;
    document.getElementById('intervals-said').textContent = intervals.disabled
      ? '(computed against ' + names[pivot] + ' only)' : '';
    Array.prototype.forEach.call(document.querySelectorAll('.legend .reference'), function (span) {
      span.textContent = names[reference];
    });
    var base = rows().filter(function (row) { return row.getAttribute('data-lang') === reference; })[0];
    rows().forEach(function (row) {
      var values = [];
      for (var c = first; c < row.cells.length; c++) {
        var cell = row.cells[c], tokens = parseFloat(cell.getAttribute('data-t'));
        var p = tokens / parseFloat(base.cells[c].getAttribute('data-t'));
        values.push(p);
        var look = color(p);
        cell.setAttribute('data-v', p.toFixed(4));
        cell.style.background = look[0];
        cell.className = look[1] ? 'dark' : '';
        var shown = text(p);
        if (intervals.checked && !intervals.disabled && cell.hasAttribute('data-lo'))
          shown += ' [' + parseFloat(cell.getAttribute('data-lo')).toFixed(2) + ', ' +
                   parseFloat(cell.getAttribute('data-hi')).toFixed(2) + ']';
        cell.textContent = shown;
      }
      values.sort(function (a, b) { return a - b; });
      var m = values.length % 2 ? values[(values.length - 1) / 2]
        : (values[values.length / 2 - 1] + values[values.length / 2]) / 2;
      row.cells[2].setAttribute('data-v', m.toFixed(4));
      row.cells[2].textContent = text(m);
    });
    said(reference);
    draw();
    // the rows in the order the table was sorted by, on the new premiums
    var grouping = table.closest('.answer') && table.closest('.answer').querySelector('input.by-script');
    if (grouping) grouping.dispatchEvent(new Event("change"));
  }
  // The sentences above the table, for the reference chosen (the page's own for the pivot).
  var original = document.getElementById('said').innerHTML;
  function said(reference) {
    var box = document.getElementById('said');
    if (reference === pivot) { box.innerHTML = original; return; }
    var others = rows().filter(function (row) { return row.getAttribute('data-lang') !== reference; });
    var paying = 0, top = null;
    others.forEach(function (row) {
      var least = Infinity;
      for (var c = first; c < row.cells.length; c++) {
        var p = parseFloat(row.cells[c].getAttribute('data-v'));
        least = Math.min(least, p);
        if (!top || p > top[0]) top = [p, row.getAttribute('data-lang'), heads[c].textContent];
      }
      if (least > 1.005) paying++;
    });
    var lines = [paying + ' of ' + others.length + ' languages need more tokens than ' +
                 names[reference] + ' for the same content under every tokenizer below.'];
    if (top) lines.push(names[top[1]] + ' pays most: ' + text(top[0]) + ' the tokens of ' +
                        names[reference] + ' under ' + top[2] + '.');
    box.innerHTML = '';
    lines.forEach(function (line) {
      var p = document.createElement('p'); p.className = 'lead'; p.textContent = line; box.appendChild(p);
    });
  }
  // Two tokenizers: each language a point (premium under x, under y), the diagonal y = x.
  function draw() {
    var x = document.getElementById('compare-x'), y = document.getElementById('compare-y');
    var cx = first + x.selectedIndex, cy = first + y.selectedIndex;
    var svg = document.getElementById('scatter'), W = 560, H = 420, M = 48;
    var reference = document.getElementById('reference').value;
    var points = rows().filter(function (row) {
        return row.style.display !== 'none' && row.getAttribute('data-lang') !== reference; })
      .map(function (row) { return [parseFloat(row.cells[cx].getAttribute('data-v')),
                                    parseFloat(row.cells[cy].getAttribute('data-v')),
                                    row.cells[0].textContent]; });
    var all = points.reduce(function (a, p) { return a.concat([p[0], p[1]]); }, [1]);
    var lo = Math.log2(Math.min.apply(null, all)), hi = Math.log2(Math.max.apply(null, all));
    if (hi - lo < 0.5) { lo -= 0.25; hi += 0.25; }
    function sx(v) { return M + (Math.log2(v) - lo) / (hi - lo) * (W - 2 * M); }
    function sy(v) { return H - M - (Math.log2(v) - lo) / (hi - lo) * (H - 2 * M); }
    var ns = 'http://www.w3.org/2000/svg';
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    function add(tag, attrs, content) {
      var node = document.createElementNS(ns, tag);
      Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
      if (content) node.textContent = content;
      svg.appendChild(node); return node;
    }
    add('line', {x1: sx(Math.pow(2, lo)), y1: sy(Math.pow(2, lo)), x2: sx(Math.pow(2, hi)),
                 y2: sy(Math.pow(2, hi)), stroke: '#999', 'stroke-dasharray': '4 3'});
    [0.5, 1, 2, 4, 8, 16].forEach(function (v) {
      if (Math.log2(v) < lo || Math.log2(v) > hi) return;
      add('text', {x: sx(v), y: H - M + 16, 'text-anchor': 'middle', 'font-size': 12}, v + 'x');
      add('text', {x: M - 6, y: sy(v) + 4, 'text-anchor': 'end', 'font-size': 12}, v + 'x');
    });
    add('text', {x: W / 2, y: H - 8, 'text-anchor': 'middle', 'font-size': 13}, x.value);
    add('text', {x: 14, y: H / 2, 'text-anchor': 'middle', 'font-size': 13,
                 transform: 'rotate(-90 14 ' + H / 2 + ')'}, y.value);
    var cheaper = 0;
    points.forEach(function (p) {
      if (p[1] < p[0]) cheaper++;
      add('circle', {cx: sx(p[0]), cy: sy(p[1]), r: 4, fill: '#2b6cb0', 'fill-opacity': 0.7})
        .appendChild(document.createElementNS(ns, 'title')).textContent =
          p[2] + ': ' + text(p[0]) + ' under ' + x.value + ', ' + text(p[1]) + ' under ' + y.value +
          ' (ratio ' + (p[1] / p[0]).toFixed(2) + ')';
    });
    // the ratio table: a row per language, as sorted and downloaded as any table
    document.getElementById('ratio-x').textContent = x.value;
    document.getElementById('ratio-y').textContent = y.value;
    var body = document.getElementById('ratios').tBodies[0];
    while (body.firstChild) body.removeChild(body.firstChild);
    points.forEach(function (p) {
      var row = body.insertRow();
      [[p[2], p[2]], [text(p[0]), p[0].toFixed(4)], [text(p[1]), p[1].toFixed(4)],
       [(p[1] / p[0]).toFixed(2), (p[1] / p[0]).toFixed(4)]].forEach(function (cell, i) {
        var td = row.insertCell(); td.textContent = cell[0];
        if (i) td.setAttribute('data-v', cell[1]);
      });
    });
    var same = points.every(function (p) { return Math.abs(p[0] - p[1]) < 5e-5; });
    document.getElementById('compare-said').textContent = x.value === y.value ? '' : same
      ? x.value + ' and ' + y.value + ' give the same premium to every language: their counts '
        + 'of this text agree (their vocabularies may still differ).'
      : cheaper + ' of ' + points.length + ' languages (' + names[reference] + ' aside) pay a '
        + 'lower premium against ' + names[reference] + ' under ' + y.value + ' than under '
        + x.value + '; a point below the diagonal is one of them.';
  }
  document.getElementById('reference').addEventListener('change', recompute);
  document.getElementById('intervals').addEventListener('change', recompute);
  document.getElementById('compare-x').addEventListener('change', draw);
  document.getElementById('compare-y').addEventListener('change', draw);
  if (heads.length > first + 1) document.getElementById('compare-y').selectedIndex = 1;
  draw();
})();
"""
