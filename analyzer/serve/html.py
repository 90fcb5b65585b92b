"""The frame every page of the service shares: its layout (navigation, style) and how it is sent
(a Content-Security-Policy that lets scripts come only from this server). As the reports do, a
page keeps its scripts and styles in files (static/, the reports' too) and gives them its data
in one JSON block (`page_data`, read by `pageData()`).

    page(layout("Runs", "<p>...</p>", scripts("workflow.js"), data={"run": 3},
                signed_in=behind_token(request)))
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from fastapi import Request
from fastapi.responses import HTMLResponse

from analyzer.report.files import page_data
from analyzer.version import __version__

NAVIGATION = (("/", "Runs"), ("/corpora/new", "Bring a corpus"), ("/runs/new", "New run"),
              ("/playground", "Playground"), ("/openapi.json", "API schema"))


def behind_token(request: Request) -> bool:
    """Whether the server has a token: its pages then offer to sign out."""
    return request.app.state.token is not None


def policy(script_hashes: Sequence[str] = ()) -> str:
    """Scripts from this server only (and inline ones with these hashes: a report's own)."""
    scripts = " ".join(["'self'", *(f"'sha256-{h}'" for h in script_hashes)])
    return (f"default-src 'self'; script-src {scripts}; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'none'")


def page(html: str, script_hashes: Sequence[str] = ()) -> HTMLResponse:
    """A page, sent with the policy and headers every page carries. `same-origin`, not
    `no-referrer`: under `no-referrer` a browser sends `Origin: null` with the page's own form
    posts, which `SameOrigin` must refuse as it would a sandboxed page of another site."""
    return HTMLResponse(html, headers={"Content-Security-Policy": policy(script_hashes),
                                       "X-Content-Type-Options": "nosniff",
                                       "Referrer-Policy": "same-origin"})


def scripts(name: str) -> str:
    """A page's script from /static, after the two every page's script uses (`page-data.js`,
    the reports' reader of the page's data; `common.js`)."""
    return "".join(f"<script src='/static/{file}'></script>"
                   for file in ("page-data.js", "common.js", name))


NO_SCRIPT = ("<noscript><p class='error'>This page's buttons and forms work through its script: "
             "allow JavaScript for this server (the reports need it too).</p></noscript>")
"""Said where a page has a script and the browser runs none (its buttons stay disabled)."""


SIGN_OUT = ("<form class='sign-out' method='post' action='/logout'><button type='submit'>"
            "Sign out</button></form>")
"""The pages' sign-out button, on a server with a token (a form: it works without a script)."""


def layout(title: str, body: str, scripts: str = "", *, data: dict | None = None,
           signed_in: bool = False) -> str:
    """A whole page: the shared head and navigation (`signed_in`: with the sign-out button),
    `title`, `body` (already escaped HTML), the `scripts` that drive it (from /static: the
    policy allows no other) and the `data` they read (the page's JSON block)."""
    links = " · ".join(f"<a href='{href}'>{name}</a>" for href, name in NAVIGATION)
    links += SIGN_OUT if signed_in else ""
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{escape(title)}</title><link rel='stylesheet' href='/static/report.css'>"
            f"<link rel='stylesheet' href='/static/playground.css'></head><body>"
            f"<nav class='muted'>{links}</nav><h1>{escape(title)}</h1>{NO_SCRIPT if scripts else ''}{body}"
            f"<p class='muted'>analyzer {escape(__version__)}</p>"
            f"{'' if data is None else page_data(data)}{scripts}</body></html>")
