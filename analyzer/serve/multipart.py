"""Multipart bodies that end before their closing boundary, or whose parts' names or fields'
values are not UTF-8, are refused (400), not half-read or misread; so are parts whose headers
the form parser would refuse without saying why (a header line over its 4,224 bytes, more than
its 8 headers) and a file named only by `filename*=`; a preamble before the first boundary
(legal, RFC 2046) is dropped before the parser, which refuses one, sees the body.

The form parser (python-multipart, through Starlette) keeps the parts it has finished and drops
the rest without a word when a body stops short of its closing delimiter (`--BOUNDARY--`): an
upload cut after its file, say, lost its `name` field and was stored under the default name.
And it reads a part's headers that are not UTF-8 (a file's name), and a field's value that is
not, as Latin-1, so that a name came out as other letters. `WholeForms` watches a multipart body
go by (without keeping it) and, when a part's headers or a field's value are not UTF-8 or the
body ends with no closing delimiter, refuses the request before any route acts on what was
parsed. (A request that gives Content-Type twice is refused before: `guards.OneOfEach`.)

A refusal sent before the body has all come waits until the rest has been read (and dropped):
a client that sends its whole body before reading the answer gets the answer, where closing the
connection on unread bytes sent it a reset instead.
"""

from __future__ import annotations

import codecs
import re

from fastapi import HTTPException
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import (
    DEFAULT_MAX_HEADER_COUNT,
    DEFAULT_MAX_HEADER_SIZE,
    parse_options_header,
)

CUT_SHORT = ("the request's multipart body ends before its closing boundary (--BOUNDARY--): it "
             "was cut short, and a part of it (a field, or the end of the file) would be lost; "
             "nothing was stored. Send the whole form again")
NOT_UTF8 = ("a part of the form has headers that are not UTF-8 ({}): its field or file name "
            "would be misread; nothing was stored. Send the names in UTF-8, as browsers do")
VALUE_NOT_UTF8 = ("the form's field {!r} has a value that is not UTF-8: it would be misread as "
                  "other letters; nothing was stored. Send the form in UTF-8, as browsers do")
HEADER_TOO_LONG = ("the form's part {part} has a header line of {size:,} bytes or more ({start}...), "
                   f"over the {DEFAULT_MAX_HEADER_SIZE:,} a part's header line may take (its file "
                   "name, say, is too long); nothing was stored. Send a shorter name")
TOO_MANY_HEADERS = (f"the form's part {{part}} has more than {DEFAULT_MAX_HEADER_COUNT} header "
                    "lines, more than a form's part may have; nothing was stored")
EXTENDED_NAME = ("the form's part {part} names its file only by filename*= (RFC 5987's "
                 "encoding), which a form may not use (RFC 7578 4.2): the part would be read as "
                 "a field, not a file; nothing was stored. Send the name as filename=\"...\" in "
                 "UTF-8, as browsers do")
UNREADABLE = ("the request's multipart body cannot be read: {}; nothing was stored. Send the "
              "form as browsers do (each part after a line --BOUNDARY, then its headers)")


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
    >>> watch = FormWatch(b"xyz")
    >>> watch.feed(b'--xyz\\r\\nContent-Disposition: form-data; name="f"; filename="' + b"x" * 5000)
    >>> watch.refusal[:73]
    "the form's part 1 has a header line of 5,052 bytes or more (Content-Dispo"
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
        self.part = 0
        """The number of the part whose headers are being read (from 1)."""
        self.refusal: str | None = None
        """Why the form parser would refuse the body without saying so (a header too long)."""

    def feed(self, chunk: bytes) -> None:
        if self.found:
            return
        data = self.pending + chunk
        while True:
            if self.in_headers:
                end = data.find(b"\r\n\r\n")
                self._check_sizes(data if end < 0 else data[:end])
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
            self.part += 1

    def _check_sizes(self, headers: bytes) -> None:
        """A refusal when a part's headers (whole or begun) are more than the form parser
        reads: a line (name, colon, value) over its size, or more lines than its count."""
        lines = headers.split(b"\r\n")[1:]  # after the rest of the boundary's line
        if self.refusal is not None:
            return
        if sum(1 for line in lines if line) > DEFAULT_MAX_HEADER_COUNT:
            self.refusal = TOO_MANY_HEADERS.format(part=self.part)
        size = max(map(len, lines), default=0)
        if size > DEFAULT_MAX_HEADER_SIZE:
            line = next(line for line in lines if len(line) == size)
            self.refusal = HEADER_TOO_LONG.format(
                part=self.part, size=size, start=line[:80].decode("utf-8", "backslashreplace"))

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
                _, params = parse_options_header(value.strip())  # drops filename*=
                if b"filename" in params:
                    continue
                if re.search(r";\s*filename\*\s*=", value, re.IGNORECASE):
                    self.refusal = self.refusal or EXTENDED_NAME.format(part=self.part)
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


class Preamble:
    """Drops what comes before a multipart body's first boundary line (its preamble, which RFC
    2046 allows and clients ignore; the form parser refuses any), holding at most a delimiter's
    bytes across the chunks' edges.

    >>> preamble = Preamble(b"xyz")
    >>> preamble.strip(b"notes\\r\\n--x"), preamble.strip(b"yz\\r\\nhead")
    (b'', b'--xyz\\r\\nhead')
    >>> Preamble(b"xyz").strip(b"--xyz\\r\\n")  # none: the body as it came
    b'--xyz\\r\\n'
    """

    def __init__(self, boundary: bytes):
        self.delimiter = b"\r\n--" + boundary
        self.held: bytes | None = b"\r\n"  # None once the first boundary has come

    def strip(self, chunk: bytes) -> bytes:
        if self.held is None:
            return chunk
        data = self.held + chunk
        at = data.find(self.delimiter)
        if at < 0:
            self.held = data[-(len(self.delimiter) - 1):]
            return b""
        self.held = None
        return data[at + 2:]


class WholeForms:
    """ASGI middleware: a `multipart/form-data` request whose body ends without its closing
    delimiter, or a part of which has headers that are not UTF-8 or more than the form parser
    reads, is a 400 (raised as the route's form is read, so nothing acts on the parts); its
    preamble is dropped; and an answer sent before the body has all come is sent once the rest
    has been read and dropped (`drained`)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        boundary = _boundary(scope) if scope["type"] == "http" else None
        if boundary is None:
            return await self.app(scope, receive, send)
        watch, preamble = FormWatch(boundary), Preamble(boundary)
        ended = False

        async def watched():
            nonlocal ended
            message = await receive()
            if message["type"] == "http.request":
                ended = not message.get("more_body", False)
                watch.feed(message.get("body", b""))
                if watch.not_utf8 is not None:
                    raise HTTPException(400, NOT_UTF8.format(watch.not_utf8))
                if watch.value_not_utf8 is not None:
                    raise HTTPException(400, VALUE_NOT_UTF8.format(watch.value_not_utf8))
                if watch.refusal is not None:
                    raise HTTPException(400, watch.refusal)
                if ended and not watch.found:
                    raise HTTPException(400, CUT_SHORT)
                message = {**message, "body": preamble.strip(message.get("body", b""))}
            elif message["type"] == "http.disconnect":
                ended = True
            return message

        async def drained(message):
            nonlocal ended
            if message["type"] == "http.response.start":
                while not ended:  # the rest of the body, read and dropped
                    rest = await receive()
                    ended = rest["type"] != "http.request" or not rest.get("more_body", False)
            await send(message)

        await self.app(scope, watched, drained)


def unreadable(error: BaseException) -> str | None:
    """What the form parser could not read in a body it refused as "Invalid multipart data.",
    from the exception it raised with that (`error`, the HTTPException that carries it); None
    when it was another refusal.

    >>> from python_multipart.exceptions import MultipartParseError
    >>> try:
    ...     try:
    ...         raise MultipartParseError("Did not find CR at end of boundary (9)")
    ...     except MultipartParseError as cause:
    ...         raise HTTPException(400, "Invalid multipart data.") from cause
    ... except HTTPException as error:
    ...     unreadable(error)[:77]
    "the request's multipart body cannot be read: Did not find CR at end of bounda"
    """
    seen: BaseException | None = error
    for _ in range(5):  # the HTTPException, Starlette's MultiPartException, the parser's
        if seen is None or isinstance(seen, FormParserError):
            break
        seen = seen.__cause__ or seen.__context__
    if not isinstance(seen, FormParserError):
        return None
    return UNREADABLE.format(str(seen).rstrip("."))


def _boundary(scope) -> bytes | None:
    """The boundary of a multipart/form-data request; None for any other body (or a multipart
    one without a boundary, which the form parser refuses itself)."""
    content_type = dict(scope["headers"]).get(b"content-type")
    if not content_type:
        return None
    kind, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    return boundary if kind == b"multipart/form-data" and boundary else None
