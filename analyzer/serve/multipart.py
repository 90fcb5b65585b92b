"""Multipart bodies that end before their closing boundary are refused (400), not half-read.

The form parser (python-multipart, through Starlette) keeps the parts it has finished and drops
the rest without a word when a body stops short of its closing delimiter (`--BOUNDARY--`): an
upload cut after its file, say, lost its `name` field and was stored under the default name.
`WholeForms` watches a multipart body go by (without keeping it) and, when it ends with no
closing delimiter, refuses the request before any route acts on what was parsed.
"""

from __future__ import annotations

from fastapi import HTTPException
from python_multipart.multipart import parse_options_header

CUT_SHORT = ("the request's multipart body ends before its closing boundary (--BOUNDARY--): it "
             "was cut short, and a part of it (a field, or the end of the file) would be lost; "
             "nothing was stored. Send the whole form again")


class ClosingDelimiter:
    """Finds a multipart body's closing delimiter (RFC 2046: CRLF, `--`, the boundary, `--`) in
    the chunks of a body as they come, across the chunks' edges, holding only a few bytes.

    >>> watch = ClosingDelimiter(b"xyz")
    >>> watch.feed(b"--xyz\\r\\nhead\\r\\n\\r\\nbody\\r\\n--x"); watch.found
    False
    >>> watch.feed(b"yz--\\r\\n"); watch.found
    True
    """

    def __init__(self, boundary: bytes):
        self.delimiter = b"\r\n--" + boundary + b"--"
        self.carry = b"\r\n"  # the body's start counts as a line's start (an empty form)
        self.found = False

    def feed(self, chunk: bytes) -> None:
        if self.found or not chunk:
            return
        window = self.carry + chunk
        self.found = self.delimiter in window
        self.carry = window[-(len(self.delimiter) - 1):]


class WholeForms:
    """ASGI middleware: a `multipart/form-data` request whose body ends without its closing
    delimiter is a 400 (raised as the route's form is read, so nothing acts on the parts)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        boundary = _boundary(scope) if scope["type"] == "http" else None
        if boundary is None:
            return await self.app(scope, receive, send)
        watch = ClosingDelimiter(boundary)

        async def watched():
            message = await receive()
            if message["type"] == "http.request":
                watch.feed(message.get("body", b""))
                if not message.get("more_body", False) and not watch.found:
                    raise HTTPException(400, CUT_SHORT)
            return message

        await self.app(scope, watched, send)


def _boundary(scope) -> bytes | None:
    """The boundary of a multipart/form-data request; None for any other body (or a multipart
    one without a boundary, which the form parser refuses itself)."""
    content_type = dict(scope["headers"]).get(b"content-type")
    if not content_type:
        return None
    kind, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    return boundary if kind == b"multipart/form-data" and boundary else None
