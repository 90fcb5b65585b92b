"""Multipart bodies that end before their closing boundary, or whose parts' names or fields'
values are not UTF-8, are refused (400), not half-read or misread.

The form parser (python-multipart, through Starlette) keeps the parts it has finished and drops
the rest without a word when a body stops short of its closing delimiter (`--BOUNDARY--`): an
upload cut after its file, say, lost its `name` field and was stored under the default name.
And it reads a part's headers that are not UTF-8 (a file's name), and a field's value that is
not, as Latin-1, so that a name came out as other letters. `WholeForms` watches a multipart body
go by (without keeping it) and, when a part's headers or a field's value are not UTF-8 or the
body ends with no closing delimiter, refuses the request before any route acts on what was
parsed. (A request that gives Content-Type twice is refused before: `guards.OneOfEach`.)
"""

from __future__ import annotations

import codecs

from fastapi import HTTPException
from python_multipart.multipart import parse_options_header

CUT_SHORT = ("the request's multipart body ends before its closing boundary (--BOUNDARY--): it "
             "was cut short, and a part of it (a field, or the end of the file) would be lost; "
             "nothing was stored. Send the whole form again")
NOT_UTF8 = ("a part of the form has headers that are not UTF-8 ({}): its field or file name "
            "would be misread; nothing was stored. Send the names in UTF-8, as browsers do")
VALUE_NOT_UTF8 = ("the form's field {!r} has a value that is not UTF-8: it would be misread as "
                  "other letters; nothing was stored. Send the form in UTF-8, as browsers do")


class FormWatch:
    """Watches a multipart body's chunks as they come, across the chunks' edges, holding only
    a part's headers and a few bytes: whether the closing delimiter (RFC 2046: CRLF, `--`, the
    boundary, `--`) came (`found`); whether each part's headers were UTF-8 (`not_utf8`, the
    first that was not: the form parser would read it as Latin-1 without a word); and whether
    each field's value (a part with no file name) was UTF-8 (`value_not_utf8`: that field's
    name; the parser reads such a value as Latin-1 too). A file's bytes are its own.

    >>> watch = FormWatch(b"xyz")
    >>> watch.feed(b"--xyz\\r\\nhead\\r\\n\\r\\nbody\\r\\n--x"); watch.found
    False
    >>> watch.feed(b"yz--\\r\\n"); watch.found, watch.not_utf8
    (True, None)
    >>> watch = FormWatch(b"xyz")
    >>> watch.feed(b'--xyz\\r\\nContent-Disposition: form-data; filename="\\xff.tsv"\\r\\n\\r\\n')
    >>> watch.not_utf8
    'Content-Disposition: form-data; filename="\\\\xff.tsv"'
    >>> watch = FormWatch(b"xyz")
    >>> watch.feed(b'--xyz\\r\\nContent-Disposition: form-data; name="name"\\r\\n\\r\\ncaf\\xe9\\r\\n--xyz--')
    >>> watch.value_not_utf8
    'name'
    """

    HEADERS_HELD = 64 * 1024
    """Bytes of a part's headers looked at (the form parser refuses longer ones itself)."""

    def __init__(self, boundary: bytes):
        self.delimiter = b"\r\n--" + boundary
        self.pending = b"\r\n"  # the body's start counts as a line's start
        self.in_headers = False
        self.found = False
        self.not_utf8: str | None = None
        self.value_not_utf8: str | None = None
        self.field: str | None = None
        """The name of the field whose value is being read (None: a file, or no part)."""
        self.value = codecs.getincrementaldecoder("utf-8")()

    def feed(self, chunk: bytes) -> None:
        if self.found:
            return
        data = self.pending + chunk
        while True:
            if self.in_headers:
                end = data.find(b"\r\n\r\n")
                if end < 0:
                    self.pending = data[-self.HEADERS_HELD:]
                    return
                self._check(data[:end])
                data, self.in_headers = data[end + 4:], False
                continue
            at = data.find(self.delimiter)
            if at < 0 or len(data) < at + len(self.delimiter) + 2:
                keep = at if at >= 0 else max(0, len(data) - len(self.delimiter) - 1)
                self._read_value(data[:keep], final=False)
                self.pending = data[keep:]
                return
            self._read_value(data[:at], final=True)
            after = data[at + len(self.delimiter):at + len(self.delimiter) + 2]
            if after == b"--":
                self.found = True
                return
            data, self.in_headers = data[at + len(self.delimiter):], True

    def _check(self, headers: bytes) -> None:
        try:
            text = headers.decode("utf-8")
        except UnicodeDecodeError:
            if self.not_utf8 is None:
                self.not_utf8 = headers.strip().decode("utf-8", "backslashreplace")[:300]
            return
        self.field = None
        for line in text.split("\r\n"):
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-disposition":
                _, params = parse_options_header(value.strip())
                if b"filename" not in params and b"filename*" not in params:
                    self.field = params.get(b"name", b"").decode("utf-8", "replace")
        self.value.reset()

    def _read_value(self, data: bytes, final: bool) -> None:
        """A piece of the current part's value, checked as UTF-8 when the part is a field."""
        if self.field is None or self.value_not_utf8 is not None:
            return
        try:
            self.value.decode(data, final)
        except UnicodeDecodeError:
            self.value_not_utf8 = self.field[:100] or "(a field with no name)"
        if final:
            self.field = None


class WholeForms:
    """ASGI middleware: a `multipart/form-data` request whose body ends without its closing
    delimiter, or a part of which has headers that are not UTF-8, is a 400 (raised as the
    route's form is read, so nothing acts on the parts)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        boundary = _boundary(scope) if scope["type"] == "http" else None
        if boundary is None:
            return await self.app(scope, receive, send)
        watch = FormWatch(boundary)

        async def watched():
            message = await receive()
            if message["type"] == "http.request":
                watch.feed(message.get("body", b""))
                if watch.not_utf8 is not None:
                    raise HTTPException(400, NOT_UTF8.format(watch.not_utf8))
                if watch.value_not_utf8 is not None:
                    raise HTTPException(400, VALUE_NOT_UTF8.format(watch.value_not_utf8))
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
