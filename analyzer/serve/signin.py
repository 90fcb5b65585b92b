"""Signing in and out, for a browser in front of a server with a token (`sessions` says what a
session is and what its cookie can do).

- `GET /login`: the form (the token, typed once). Its script (`static/signin.js`) sends it and
  keeps the session's write key the answer gives in this origin's storage; without a script the
  form posts itself, and the pages then read but cannot write.
- `POST /login`: the token checked; a new session, its cookie set (HttpOnly, SameSite=Strict,
  Path=/, a name of this port's, for the session's lifetime), the browser's previous session
  here ended; then the page asked for (303), or (a script asking for JSON) `{next, write_key}`.
- `POST /logout` (the pages' button) and `DELETE /api/session` (the API's): end the session the
  cookie names and clear the cookie.
"""

from __future__ import annotations

import hmac
from html import escape
from urllib.parse import parse_qs

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from .guards import LOGIN_PATH, LOGOUT_PATH, SESSION_PATH, SIGN_IN_SCRIPT, SIGN_IN_STYLE
from .html import page
from .problems import problem
from .sessions import Sessions, cookie_name, cookie_values

router = APIRouter()

ENDED = ("Your session has ended: it expired, it was signed out (in another tab, perhaps), or the "
         "server restarted. Sign in again.")
SIGNED_OUT = "You are signed out."
WRONG = "That is not the token of this server."


def _login_page(target: str, said: str = "", status: int = 200, forget: bool = False) -> HTMLResponse:
    """The sign-in form of a server with a token (its style and its one script from /static,
    open without the token). `forget`: its script drops the write key this browser kept
    (signed out)."""
    html = ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>Sign in: analyzer</title><link rel='stylesheet' href='{SIGN_IN_STYLE}'>"
            "</head><body>"
            "<h1>analyzer</h1><p>This server needs its token.</p>"
            f"<p class='error' id='signin-error' role='alert'{'' if said else ' hidden'}>"
            f"{escape(said)}</p>"
            f"<form id='signin' method='post' action='{LOGIN_PATH}'"
            f"{' data-forget' if forget else ''}>"
            f"<input type='hidden' name='next' value='{escape(target, quote=True)}'>"
            "<label>Token <input type='password' name='token' autocomplete='current-password' "
            "autofocus required></label><button type='submit'>Sign in</button></form>"
            f"<script src='{SIGN_IN_SCRIPT}'></script></body></html>")
    response = page(html)
    response.status_code = status
    return response


def _local(target: str) -> str:
    """Where to go after signing in: a path of this server, never another site."""
    return target if target.startswith("/") and not target.startswith(("//", "/\\")) else "/"


@router.get(LOGIN_PATH, response_class=HTMLResponse, include_in_schema=False)
def login_form(next: str = "/", ended: bool = False, signed_out: bool = False):
    said = ENDED if ended else SIGNED_OUT if signed_out else ""
    return _login_page(_local(next), said, forget=ended or signed_out)


def _ended_here(request: Request) -> None:
    """End every session the request's cookie names on this server."""
    sessions: Sessions = request.app.state.sessions
    for held in cookie_values(request.scope["headers"], cookie_name(request.scope)):
        sessions.end(held)


@router.post(LOGIN_PATH, response_class=HTMLResponse, include_in_schema=False)
async def login(request: Request):
    """Check the token a browser typed; on success, a new session: its cookie, and the page
    it wanted (or, asked for JSON by the page's script, where to go and the write key)."""
    try:
        fields = parse_qs((await request.body()).decode("utf-8"), max_num_fields=8)
    except (UnicodeDecodeError, ValueError):
        raise HTTPException(400, "the sign-in form is not UTF-8 form data") from None
    target = _local(fields.get("next", ["/"])[0])
    wants_json = "application/json" in request.headers.get("accept", "")
    token = request.app.state.token
    given = fields.get("token", [""])[0].strip()
    if token is None:  # no token on this server: nothing to sign in to
        return (JSONResponse({"next": target, "write_key": None}) if wants_json
                else RedirectResponse(target, 303))
    if not hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8")):
        if wants_json:
            return problem(401, "Unauthorized", WRONG)
        return _login_page(target, WRONG, status=401)
    _ended_here(request)  # a new sign-in replaces this browser's session, never adds one
    session = request.app.state.sessions.start()
    response: Response = (JSONResponse({"next": target, "write_key": session.write_key})
                          if wants_json else RedirectResponse(target, 303))
    response.set_cookie(cookie_name(request.scope), session.id,
                        max_age=int(request.app.state.sessions.lifetime), httponly=True,
                        samesite="strict", secure=request.url.scheme == "https", path="/")
    return response


def _signed_out(request: Request, response: Response) -> Response:
    _ended_here(request)
    response.delete_cookie(cookie_name(request.scope), path="/", httponly=True,
                           samesite="strict", secure=request.url.scheme == "https")
    return response


@router.post(LOGOUT_PATH, include_in_schema=False)
def logout(request: Request):
    """The pages' sign-out button: the session ended, its cookie cleared, the sign-in page."""
    return _signed_out(request, RedirectResponse(f"{LOGIN_PATH}?signed_out=1", 303))


@router.delete(SESSION_PATH, summary="Sign out: end the session the cookie names")
def end_session(request: Request, response: Response) -> dict:
    """The browser's session on this server ended and its cookie cleared (a program with the
    bearer token has no session: nothing to end). `signed_out`: whether there was one."""
    sessions: Sessions = request.app.state.sessions
    held = cookie_values(request.scope["headers"], cookie_name(request.scope))
    was = any(sessions.find(value) is not None for value in held)
    _signed_out(request, response)
    return {"signed_out": was}
