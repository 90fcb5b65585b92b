"""The pages: the index of corpora and runs, a run's report, and the playground.

Every page is sent with a Content-Security-Policy: scripts only from this server (a run's
report keeps its own inline scripts, allowed by their hashes), no plugins, no framing, requests
only to this server. Everything from a corpus or a client is escaped.
"""

from __future__ import annotations

import base64
import hashlib
import re
from html import escape
from importlib.resources import files
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from plotly.offline import get_plotlyjs

from analyzer.bpe.readable import PARTIAL_KEY
from analyzer.external import availability, catalog
from analyzer.identity import KINDS
from analyzer.report import build_page
from analyzer.report.files import STATIC as REPORT_STATIC
from analyzer.report.files import plotly_file_name
from analyzer.store import RunStatus, get_run, list_corpora, list_runs, measured_names, queued_runs

from .api import MAX_ID
from .html import behind_token, layout, page, scripts
from .paths import source_shown
from .state import Database, Document, in_database, unchanged
from .workflow import SCRIPT, run_progress_page

router = APIRouter(include_in_schema=False)

STATIC = (files("analyzer.serve") / "static", REPORT_STATIC)
"""The pages' scripts and styles, one set of names (a test keeps the two folders' apart): the
service's own, and the reports', which its pages share (their style; page-data.js, which reads
a page's data)."""
STATIC_TYPES = {".js": "text/javascript", ".css": "text/css"}


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)([^>]*)>(.*?)</script>", re.S)


def inline_script_hashes(html: str) -> list[str]:
    """The SHA-256 of each inline script a page runs (JSON data blocks do not run)."""
    return [base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode()
            for attributes, body in INLINE_SCRIPT.findall(html) if "application/json" not in attributes]


@router.get("/", response_class=HTMLResponse)
def index(request: Request, db: Database):
    """The corpora, the queue and the runs, each with what can be done next."""
    corpora = "".join(
        f"<tr><td>{escape(c.name)}</td><td>{len(c.languages)}</td><td>{c.units:,}</td>"
        f"<td>{c.bytes:,}</td><td>{escape(source_shown(c).source)}</td><td><a href='/runs/new?"
        f"{urlencode({'corpus': c.name})}'>new run</a></td></tr>" for c in list_corpora(db))
    waiting = "".join(
        f"<tr><td><a href='/queue/{q.id}'>{q.id}</a></td><td>{escape(q.corpus or '')}</td>"
        f"<td>{escape(str(q.status))}</td><td>{q.position or ''}</td>"
        f"<td>{escape(', '.join(map(str, q.settings.get('sizes') or [])) or 'none')}</td>"
        f"<td>{escape(', '.join(q.settings.get('tokenizers') or []) or 'none')}</td>"
        f"<td>{escape(q.submitted)}</td></tr>" for q in queued_runs(db))
    measured = measured_names(db)  # stored with a run's results: known once it is complete
    runs = "".join(
        f"<tr><td><a href='/runs/{r.id}'>{r.id}</a></td><td>{escape(r.corpus)}</td>"
        f"<td class='status-{escape(str(r.status))}'>{escape(str(r.status))}</td>"
        f"<td>{escape(', '.join(map(str, r.sizes)) or 'none')}</td>"
        f"<td>{escape(_measured(measured.get(r.id, []), r.status))}</td>"
        f"<td>{len(r.languages)}</td>"
        f"<td>{escape(r.started)}</td><td>"
        + (f"<a href='/runs/{r.id}'>report</a> · <a href='/api/runs/{r.id}/export'>export</a>"
           if r.status == RunStatus.COMPLETE else f"<a href='/runs/{r.id}'>watch</a>"
           if r.status == RunStatus.RUNNING else escape(r.error or "")) + "</td></tr>"
        for r in reversed(list_runs(db)))
    sample = sample_run()
    body = (QUESTION + _sample_offer(sample)
            + "<h2>Corpora</h2><table id='corpora'><thead><tr><th>name</th><th>languages</th>"
            "<th>units</th><th>bytes</th><th>source</th><th></th></tr></thead>"
            f"<tbody>{corpora}</tbody></table>"
            + ("<p><a href='/corpora/new'>Bring a corpus</a></p>" if corpora else
               "<p id='first-step'>No corpus yet. Bring one first: <a href='/corpora/new'>upload "
               "it here</a> (a zip of a folder of one text file per language, aligned line by "
               "line, or a .tsv with a column per language), or from a terminal, "
               "<code>analyzer ingest FOLDER</code>. Then start a run.</p>")
            + ("<h2>Queue</h2><table id='queue'><thead><tr><th>queued</th><th>corpus</th>"
               "<th>status</th><th>position</th><th>sizes</th><th>tokenizers</th><th>asked for</th>"
               "</tr></thead>"
               f"<tbody>{waiting}</tbody></table>" if waiting else "")
            + "<h2>Runs</h2><table id='runs'><thead><tr><th>run</th><th>corpus</th><th>status</th>"
            "<th>sizes</th><th>tokenizers</th><th>languages</th><th>started</th><th></th></tr></thead>"
            f"<tbody>{runs}</tbody></table>"
            + ("" if runs else "<p>No runs yet: <a href='/runs/new'>start one</a>, or from a "
               "terminal, <code>analyzer run --vocab 512</code>.</p>"))
    return page(layout("analyzer", body, SCRIPT, data={"sample": sample},
                       signed_in=behind_token(request)))


QUESTION = ("<p class='lead' id='question'>How many more tokens does the same text cost in "
            "each language than in English, under the tokenizers people pay for and under "
            "vocabularies trained on your own corpus? Bring a parallel corpus (the same text "
            "in many languages), and each run answers it, language by language.</p>")
"""What the service answers, said first on its home page."""

SAMPLE_SIZES = [256, 512, 1024]
"""The sizes the sample run trains: the README's first command's (`--vocab 256,512,1024`)."""


def sample_run() -> dict:
    """The settings of the home page's one-click run on the shipped sample: the README's first
    command's sizes, and the well-known tokenizers this server has (`PLAYGROUND_TOKENIZERS`)."""
    found = catalog()
    return {"sizes": SAMPLE_SIZES,
            "tokenizers": [name for name in PLAYGROUND_TOKENIZERS
                           if name in found and availability(found[name]).available]}


def _sample_offer(sample: dict) -> str:
    """The home page's offer of the sample: what it is, what the run does, one button."""
    measured = (f" and measures {', '.join(sample['tokenizers'])}" if sample["tokenizers"] else "")
    return ("<div id='sample'><p><button id='try-sample' type='button' disabled>Try it on the "
            "sample corpus</button> <span class='muted'>twelve languages, twenty paragraphs "
            "(shipped with the analyzer): the run trains vocabularies of "
            f"{', '.join(f'{size:,}' for size in SAMPLE_SIZES)} tokens{escape(measured)}, "
            "as the README's first command does.</span></p>"
            "<p id='sample-status' class='muted' role='status' hidden></p>"
            "<p class='error' id='sample-error' role='alert' hidden></p></div>")


def _measured(names: list[str], status: RunStatus) -> str:
    """The tokenizers a run measured, as the runs list names them (a run not complete has
    stored none yet: nothing is said)."""
    return ", ".join(names) or ("none" if status == RunStatus.COMPLETE else "")


@router.get("/runs/{run_id:int}", response_class=HTMLResponse)
async def run_page(request: Request, run_id: Annotated[int, Path(ge=1, le=MAX_ID)]):
    """A complete run's report, made once (see `Documents`) and sent with an ETag
    (`If-None-Match` gets 304); a run not complete, its progress (live while it runs) or how
    it ended."""
    found = await in_database(request, lambda db: get_run(db, run_id))
    if found.status != RunStatus.COMPLETE:
        return run_progress_page(found, signed_in=behind_token(request))

    def make() -> Document:
        with request.app.state.databases.connection() as db:
            html = build_page(db, run_id, index_href="/").html
        return Document(html, html.encode("utf-8"))

    document = await request.app.state.documents.get(("page", run_id, found.started), make)
    if unchanged(request, document):  # the report never changes: the browser's copy is it
        return Response(status_code=304, headers={"ETag": document.etag})
    sent = page(document.body, inline_script_hashes(document.body))
    sent.headers["ETag"] = document.etag
    return sent


@router.get("/favicon.ico")
def favicon():
    return Response(status_code=204)  # no icon, and no 404 in every browser's console


@router.get("/runs/index.html")
def runs_index():
    return RedirectResponse("/")


_PLOTLY: dict[str, bytes] = {}


@router.get("/runs/{name}.min.js")
def plotly_js(name: str):
    """plotly.js, from the package, where a report page looks for it (beside the page)."""
    if f"{name}.min.js" != plotly_file_name():
        return Response("not found", status_code=404, media_type="text/plain")
    if "js" not in _PLOTLY:
        _PLOTLY["js"] = get_plotlyjs().encode("utf-8")
    return Response(_PLOTLY["js"], media_type="text/javascript",
                    headers={"Cache-Control": "public, max-age=31536000, immutable"})


@router.get("/static/{name}")
def static(name: str):
    """The pages' scripts and style: a fixed set of files of the package."""
    suffix = name[name.rfind("."):] if "." in name else ""
    found = [] if "/" in name or suffix not in STATIC_TYPES else [
        folder / name for folder in STATIC if (folder / name).is_file()]
    if not found:
        return Response("not found", status_code=404, media_type="text/plain")
    item = found[0]
    return Response(item.read_bytes(), media_type=STATIC_TYPES[suffix])


PLAYGROUND_TOKENIZERS = ("o200k_base", "cl100k_base", "llama3")
"""The catalog tokenizers the playground ticks at first, those of them on this server (the
best-known, each counted offline once its files are here; with none of them, the first one
that is). Which to tick is the page's choice; what each one is, is the catalog's."""
OWN_TEXT = "text"
"""The playground's own text's key, which it sends as a language (a corpus's are codes); it
reads as "your text", and has no premium, being no language beside another."""


@router.get("/playground", response_class=HTMLResponse)
def playground(request: Request):
    # The kinds ticked at first (`analyzer.identity.KINDS`), a plug-in's too.
    data = {"own": OWN_TEXT, "ticked": list(PLAYGROUND_TOKENIZERS),
            "shownFirst": [str(kind) for kind, about in KINDS.items() if about.shown_first]}
    body = (
        "<p class='lead'>Paste a text, or pick a unit of a corpus to see it in all its languages; "
        "choose a run's vocabularies and catalog tokenizers. Counts and pieces update as you "
        "type.</p>"
        "<form id='controls' autocomplete='off' aria-busy='true'>"
        "<fieldset><legend>Text</legend>"
        "<label>Corpus <select id='corpus'><option value=''>(my own text)</option></select></label> "
        "<label>Unit <input id='unit' type='number' min='0' value='0'></label> "
        f"<div id='texts'><label class='text'><span class='lang'>your "
        f"text</span><textarea data-lang='{OWN_TEXT}' rows='3'>The same meaning costs some "
        "languages more tokens.</textarea></label></div></fieldset>"
        "<fieldset><legend>Vocabularies</legend>"
        "<label>Run <select id='run'><option value=''>(loading…)</option></select></label> "
        "<label>Size <input id='size' type='number' min='256' placeholder='largest'></label>"
        "<div id='vocabs'></div></fieldset>"
        "<fieldset><legend>Tokenizers</legend><div id='tokenizers'>"
        "<span class='muted'>Loading the tokenizers…</span></div></fieldset>"
        "</form><p id='status' class='muted' role='status'>Loading the corpora, runs and "
        "tokenizers…</p><div id='results'></div>"
        f"<p id='partial-key' class='muted' hidden>{escape(PARTIAL_KEY)}</p>")
    return page(layout("Playground", body, scripts("playground.js"), data=data,
                       signed_in=behind_token(request)))
