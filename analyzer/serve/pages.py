"""The pages: the index of corpora and runs, a run's report, and the playground.

Every page is sent with a Content-Security-Policy: scripts only from this server (a run's
report keeps its own inline scripts, allowed by their hashes), no plugins, no framing, requests
only to this server. Everything from a corpus or a client is escaped.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Sequence
from html import escape
from importlib.resources import files

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from plotly.offline import get_plotlyjs

from analyzer import __version__
from analyzer.queries import complete_run
from analyzer.report import build_page
from analyzer.report.files import STYLE, plotly_file_name
from analyzer.store import list_corpora, list_runs

router = APIRouter(include_in_schema=False)

STATIC = files("analyzer.serve") / "static"
STATIC_TYPES = {".js": "text/javascript", ".css": "text/css"}


def policy(script_hashes: Sequence[str] = ()) -> str:
    scripts = " ".join(["'self'", *(f"'sha256-{h}'" for h in script_hashes)])
    return (f"default-src 'self'; script-src {scripts}; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'none'")


def page(html: str, script_hashes: Sequence[str] = ()) -> HTMLResponse:
    return HTMLResponse(html, headers={"Content-Security-Policy": policy(script_hashes),
                                       "X-Content-Type-Options": "nosniff",
                                       "Referrer-Policy": "no-referrer"})


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)([^>]*)>(.*?)</script>", re.S)


def inline_script_hashes(html: str) -> list[str]:
    """The SHA-256 of each inline script a page runs (JSON data blocks do not run)."""
    return [base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode()
            for attributes, body in INLINE_SCRIPT.findall(html) if "application/json" not in attributes]


def layout(title: str, body: str, scripts: str = "") -> str:
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{escape(title)}</title><style>{STYLE}</style>"
            f"<link rel='stylesheet' href='/static/playground.css'></head><body>"
            f"<nav class='muted'><a href='/'>Runs</a> · <a href='/playground'>Playground</a> · "
            f"<a href='/docs'>API</a></nav><h1>{escape(title)}</h1>{body}"
            f"<p class='muted'>analyzer {escape(__version__)}</p>{scripts}</body></html>")


@router.get("/", response_class=HTMLResponse)
def index(request: Request):
    db = request.app.state.databases.get()
    corpora = "".join(
        f"<tr><td>{escape(c.name)}</td><td>{len(c.languages)}</td><td>{c.units:,}</td>"
        f"<td>{c.bytes:,}</td><td>{escape(c.source)}</td></tr>" for c in list_corpora(db))
    runs = "".join(
        f"<tr><td>{r.id}</td><td>{escape(r.corpus)}</td><td class='status-{escape(str(r.status))}'>"
        f"{escape(str(r.status))}</td><td>{escape(', '.join(map(str, r.sizes)))}</td>"
        f"<td>{len(r.languages)}</td><td>{escape(r.started)}</td><td>"
        + (f"<a href='/runs/{r.id}'>report</a> · <a href='/api/runs/{r.id}/export'>export</a>"
           if str(r.status) == "complete" else escape(r.error or "")) + "</td></tr>"
        for r in reversed(list_runs(db)))
    body = ("<h2>Corpora</h2><table><thead><tr><th>name</th><th>languages</th><th>units</th>"
            f"<th>bytes</th><th>source</th></tr></thead><tbody>{corpora}</tbody></table>"
            "<h2>Runs</h2><table id='runs'><thead><tr><th>run</th><th>corpus</th><th>status</th>"
            "<th>sizes</th><th>languages</th><th>started</th><th></th></tr></thead>"
            f"<tbody>{runs}</tbody></table>"
            + ("" if runs else "<p>No runs yet: <code>analyzer run --vocab 512</code>, or "
               "POST /api/runs.</p>"))
    return page(layout("analyzer", body))


@router.get("/runs/{run_id:int}", response_class=HTMLResponse)
def run_page(request: Request, run_id: int):
    db = request.app.state.databases.get()
    complete_run(db, run_id)
    html = build_page(db, run_id).html.replace("<a href='index.html'>All runs</a>",
                                                "<a href='/'>All runs</a>")
    return page(html, inline_script_hashes(html))


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
    """The playground's script and style: a fixed set of files of the package."""
    suffix = name[name.rfind("."):] if "." in name else ""
    item = STATIC / name
    if "/" in name or suffix not in STATIC_TYPES or not item.is_file():
        return Response("not found", status_code=404, media_type="text/plain")
    return Response(item.read_bytes(), media_type=STATIC_TYPES[suffix])


@router.get("/playground", response_class=HTMLResponse)
def playground():
    body = (
        "<p class='lead'>Paste a text, or pick a unit of a corpus to see it in all its languages; "
        "choose a run's vocabularies and catalog tokenizers. Counts and pieces update as you "
        "type.</p>"
        "<form id='controls' autocomplete='off'>"
        "<fieldset><legend>Text</legend>"
        "<label>Corpus <select id='corpus'><option value=''>(my own text)</option></select></label> "
        "<label>Unit <input id='unit' type='number' min='0' value='0'></label> "
        "<div id='texts'><label class='text'><span class='lang'>text</span>"
        "<textarea data-lang='text' rows='3'>The same meaning costs some languages more tokens.</textarea>"
        "</label></div></fieldset>"
        "<fieldset><legend>Vocabularies</legend>"
        "<label>Run <select id='run'><option value=''>(none)</option></select></label> "
        "<label>Size <input id='size' type='number' min='256' placeholder='largest'></label>"
        "<div id='vocabs'></div></fieldset>"
        "<fieldset><legend>Tokenizers</legend><div id='tokenizers'></div></fieldset>"
        "</form><p id='status' class='muted' role='status'></p><div id='results'></div>")
    return page(layout("Playground", body, "<script src='/static/playground.js'></script>"))
