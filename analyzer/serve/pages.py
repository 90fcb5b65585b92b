"""The pages: the index of corpora and runs, a run's report, and the playground.

Every page is sent with a Content-Security-Policy: scripts only from this server (a run's
report keeps its own inline scripts, allowed by their hashes), no plugins, no framing, requests
only to this server. Everything from a corpus or a client is escaped.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Sequence
from html import escape
from importlib.resources import files
from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from plotly.offline import get_plotlyjs

from analyzer import __version__
from analyzer.queries import complete_run
from analyzer.report import build_page
from analyzer.report.files import STYLE, plotly_file_name
from analyzer.store import list_corpora, list_runs

from .api import MAX_ID
from .guards import LOGIN_PATH, SESSION_COOKIE, session_value
from .state import Database, Document, in_database

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
            f"<a href='/openapi.json'>API schema</a></nav><h1>{escape(title)}</h1>{body}"
            f"<p class='muted'>analyzer {escape(__version__)}</p>{scripts}</body></html>")


@router.get("/", response_class=HTMLResponse)
def index(db: Database):
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
            + ("" if corpora else "<p id='first-step'>No corpus yet. Bring one first: "
               "<code>analyzer ingest FOLDER</code> (a folder of one text file per language, "
               "aligned line by line), then start a run.</p>")
            + "<h2>Runs</h2><table id='runs'><thead><tr><th>run</th><th>corpus</th><th>status</th>"
            "<th>sizes</th><th>languages</th><th>started</th><th></th></tr></thead>"
            f"<tbody>{runs}</tbody></table>"
            + ("" if runs else "<p>No runs yet: <code>analyzer run --vocab 512</code>, or "
               "POST /api/runs.</p>"))
    return page(layout("analyzer", body))


@router.get("/runs/{run_id:int}", response_class=HTMLResponse)
async def run_page(request: Request, run_id: Annotated[int, Path(ge=1, le=MAX_ID)]):
    """A complete run's report, made once (see `Documents`)."""
    found = await in_database(request, lambda db: complete_run(db, run_id))

    def make() -> Document:
        with request.app.state.databases.connection() as db:
            html = build_page(db, run_id, index_href="/").html
        return Document(html, html.encode("utf-8"))

    document = await request.app.state.documents.get(("page", run_id, found.started), make)
    return page(document.body, inline_script_hashes(document.body))


LOGIN_STYLE = ("body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}"
               "input{font-size:1rem;padding:.3rem;width:100%;box-sizing:border-box;margin:.4rem 0}"
               "button{font-size:1rem;padding:.3rem 1rem}.error{color:#b00}")


def _login_page(target: str, error: str = "", status: int = 200) -> HTMLResponse:
    """The sign-in form of a server with a token (self-contained: it loads nothing)."""
    html = ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>Sign in: analyzer</title><style>{LOGIN_STYLE}</style></head><body>"
            "<h1>analyzer</h1><p>This server needs its token.</p>"
            + (f"<p class='error' role='alert'>{escape(error)}</p>" if error else "")
            + f"<form method='post' action='{LOGIN_PATH}'>"
            f"<input type='hidden' name='next' value='{escape(target, quote=True)}'>"
            "<label>Token <input type='password' name='token' autocomplete='current-password' "
            "autofocus required></label><button type='submit'>Sign in</button></form></body></html>")
    response = page(html)
    response.status_code = status
    return response


def _local(target: str) -> str:
    """Where to go after signing in: a path of this server, never another site."""
    return target if target.startswith("/") and not target.startswith(("//", "/\\")) else "/"


@router.get(LOGIN_PATH, response_class=HTMLResponse)
def login_form(request: Request, next: str = "/"):
    return _login_page(_local(next))


@router.post(LOGIN_PATH, response_class=HTMLResponse)
async def login(request: Request):
    """Check the token a browser typed; on success, a session cookie and the page it wanted."""
    fields = parse_qs((await request.body()).decode("utf-8", errors="replace"))
    target = _local(fields.get("next", ["/"])[0])
    token = request.app.state.token
    given = fields.get("token", [""])[0].strip()
    if token is None:
        return RedirectResponse(target, 303)  # no token on this server: nothing to sign in to
    if not hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8")):
        return _login_page(target, "That is not the token of this server.", status=401)
    response = RedirectResponse(target, 303)
    response.set_cookie(SESSION_COOKIE, session_value(token), httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/")
    return response


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
        "<form id='controls' autocomplete='off' aria-busy='true'>"
        "<fieldset><legend>Text</legend>"
        "<label>Corpus <select id='corpus'><option value=''>(my own text)</option></select></label> "
        "<label>Unit <input id='unit' type='number' min='0' value='0'></label> "
        "<div id='texts'><label class='text'><span class='lang'>text</span>"
        "<textarea data-lang='text' rows='3'>The same meaning costs some languages more tokens.</textarea>"
        "</label></div></fieldset>"
        "<fieldset><legend>Vocabularies</legend>"
        "<label>Run <select id='run'><option value=''>(loading…)</option></select></label> "
        "<label>Size <input id='size' type='number' min='256' placeholder='largest'></label>"
        "<div id='vocabs'></div></fieldset>"
        "<fieldset><legend>Tokenizers</legend><div id='tokenizers'>"
        "<span class='muted'>Loading the tokenizers…</span></div></fieldset>"
        "</form><p id='status' class='muted' role='status'>Loading the corpora, runs and "
        "tokenizers…</p><div id='results'></div>")
    return page(layout("Playground", body, "<script src='/static/playground.js'></script>"))
