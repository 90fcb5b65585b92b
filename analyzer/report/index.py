"""reports/index.html: every run of the database, with a link where its page exists."""

from __future__ import annotations

from html import escape
from pathlib import Path

from analyzer.corpus import language_name
from analyzer.files import write_atomically
from analyzer.metrics import headline_vocabulary, premium_text
from analyzer.store import (
    AnalyzerDatabase,
    RunStatus,
    StoreError,
    list_runs,
    vocabularies,
    vocabulary_totals,
)

from .files import DEFAULT_OUT, inline_styles


def write_index(db: AnalyzerDatabase, out: Path = DEFAULT_OUT) -> Path:
    """Write the index of runs, newest first, each with its highest premium."""
    rows = []
    for run in reversed(list_runs(db)):
        page = out / f"run-{run.id}.html"
        link = f"<a href='{page.name}'>run {run.id}</a>" if page.exists() else f"run {run.id}"
        worst = ""
        if run.status == RunStatus.COMPLETE:
            totals: dict[str, int] = {}
            try:
                stored = vocabularies(db, run.id)
            except StoreError as error:  # a plug-in's kind, its plug-in not installed here:
                worst = str(error).split(": ")[0]  # the run listed, and why it is not read
            else:
                scope, pretokenizer, size = headline_vocabulary(run, stored)
                totals = vocabulary_totals(db, run.id, scope, size, pretokenizer)
            if run.pivot in totals and len(totals) > 1:
                lang = max((lang for lang in totals if lang != run.pivot), key=totals.__getitem__)
                worst = f"{language_name(lang)} {premium_text(totals[lang] / totals[run.pivot])}"
        rows.append(f"<tr><td>{link}</td><td>{escape(run.corpus)}</td><td>{escape(run.status)}</td>"
                    f"<td>{len(run.languages)}</td><td>{escape(', '.join(map(str, run.sizes)))}</td>"
                    f"<td>{escape(run.started.replace('T', ' ')[:16])} UTC</td>"
                    f"<td>{escape(worst)}</td></tr>")
    html = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>analyzer runs</title>"
            f"{inline_styles('report.css')}</head><body><h1>Runs</h1><table><thead><tr><th>run</th>"
            f"<th>corpus</th><th>status</th><th>languages</th><th>sizes</th><th>date</th>"
            f"<th>highest premium (shared, largest size)</th></tr></thead><tbody>{''.join(rows)}"
            f"</tbody></table></body></html>")
    path = out / "index.html"
    write_atomically(path, html)
    return path
