"""A token's bytes as a reader can read them: the text they stand for, in quotes, and the bytes
that are only part of a character (a BPE token may end or start inside one) marked apart.

>>> readable("กา".encode()), readable(b"\\xe0\\xb8"), readable("ก".encode() + b"\\xe0")
("'กา'", '‹e0 b8›', "'ก'‹e0›")
"""

from __future__ import annotations

import re

_PARTIAL = re.compile("[\udc80-\udcff]+")
"""The bytes `surrogateescape` could not decode: pieces of characters."""


def readable(piece: bytes) -> str:
    """The text of `piece` in quotes (escapes for what cannot be printed, as Python writes
    them), with each run of bytes that is not a whole UTF-8 character as hex in ‹ ›.

    >>> readable(b"e "), readable(b"\\n"), readable(b"")
    ("'e '", "'\\\\n'", "''")
    """
    return _written(piece, repr)


def marked(piece: bytes) -> str:
    """The text of `piece` as it is (for a page that shows spaces and line ends itself), its
    bytes that are not a whole UTF-8 character marked as `readable` marks them: the playground
    writes a token's bytes as the terminal does.

    >>> marked("กา".encode()), marked("ก".encode() + b"\\xe0\\xb8"), marked(b"a b")
    ('กา', 'ก‹e0 b8›', 'a b')
    """
    return _written(piece, str)


def _written(piece: bytes, text_as) -> str:
    """`piece` written part by part: its whole characters' text by `text_as` (in quotes, or
    as it is), each run of bytes that is not a whole character as hex in ‹ ›."""
    text = piece.decode("utf-8", errors="surrogateescape")
    parts: list[str] = []
    last = 0
    for match in _PARTIAL.finditer(text):
        if match.start() > last:
            parts.append(text_as(text[last:match.start()]))
        raw = match.group().encode("utf-8", errors="surrogateescape")
        parts.append("‹" + " ".join(f"{byte:02x}" for byte in raw) + "›")
        last = match.end()
    if last < len(text) or not parts:
        parts.append(text_as(text[last:]))
    return "".join(parts)


PARTIAL_KEY = "‹hex›: bytes that are not a whole UTF-8 character"
"""What the marks mean, for under a list of tokens."""
