"""Read a text file the way every format needs it: strict UTF-8, no BOM, LF line ends."""

from __future__ import annotations

import codecs
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from .errors import CorpusError

# Longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
_BYTE_ORDER_MARKS = [(b"\xff\xfe\x00\x00", "UTF-32LE"), (b"\x00\x00\xfe\xff", "UTF-32BE"),
                     (b"\xff\xfe", "UTF-16LE"), (b"\xfe\xff", "UTF-16BE")]


def lone_surrogate(text: str) -> int | None:
    """Where `text` holds a lone surrogate, or None: JSON's `\\ud800` escape, or a command-line
    argument that was not UTF-8, spells one; it is not text, and has no UTF-8 to store.

    >>> lone_surrogate("café"), lone_surrogate("ab\\ud800")
    (None, 2)
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None


def path_text(path: Path | str) -> str:
    """A path as text to keep and show: the bytes of a name that are not UTF-8 (which Python
    reads as lone surrogates, and no database or document can hold) written as `\\xff`.

    >>> path_text("corpora/caf" + chr(0xDCFF))
    'corpora/caf\\\\xff'
    """
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def quoted(text: str) -> str:
    """`text` quoted as `repr` quotes it, a byte of a name that was not UTF-8 (a lone surrogate,
    as Python reads such a name) written `\\xff` as `path_text` writes it, not `\\udcff`.

    >>> print(quoted(chr(0xDCFF)), quoted("a\\\\udcff"), quoted("eng"))
    '\\xff' 'a\\\\udcff' 'eng'
    """
    def byte(match: re.Match[str]) -> str:
        slashes = match.group(1)  # an odd count: the last one starts the escape
        return slashes[:-1] + "\\x" + match.group(2) if len(slashes) % 2 else match.group(0)
    return re.sub(r"(\\+)udc([89a-f][0-9a-f])", byte, repr(text))


def undecodable_byte(path: Path | str) -> int | None:
    """The first byte of `path` that is not UTF-8, or None when the whole path is.

    >>> undecodable_byte("caf" + chr(0xDCFF)), undecodable_byte("café")
    (255, None)
    """
    at = lone_surrogate(str(path))
    return None if at is None else os.fsencode(str(path)[at])[0]


COMPRESSIONS = {"gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd", "xz": b"\xfd7zXZ\x00"}
"""Each compression by the bytes its streams begin with."""
DECOMPRESS = {"gzip": "gunzip -k", "zstd": "unzstd", "xz": "unxz -k"}
"""The command that decompresses each, keeping the file."""


def compression_of(data: bytes) -> str | None:
    """The compression whose stream `data` begins with, or None.

    >>> compression_of(b"\\x1f\\x8b\\x08"), compression_of(b"eng_Latn\\t")
    ('gzip', None)
    """
    return next((name for name, magic in COMPRESSIONS.items() if data.startswith(magic)), None)


class NotJSON(ValueError):
    """A text that `parse_json` cannot read, its message saying why in words."""


class Malformed(NotJSON):
    """Not JSON at all (`parse_json`'s "not JSON (... at column N)")."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`json.loads`'s object_pairs_hook refusing (NotJSON) an object that gives a key twice,
    where json keeps the last without a word.

    >>> parse_json('{"a": 1, "a": 2}', object_pairs_hook=unique_keys)
    Traceback (most recent call last):
    ...
    analyzer.corpus.files.NotJSON: the key 'a' is given twice in one object
    """
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise NotJSON(f"the key {key!r} is given twice in one object")
        seen[key] = value
    return seen


def parse_json(text: str | bytes, **options: Any) -> Any:
    """`json.loads(text, **options)`, every way it can fail said in words (NotJSON): not
    JSON (where), nested too deeply, or a number of more digits than Python reads (4,300:
    such a number is valid JSON, not a damaged line).

    >>> parse_json('{"a": 1}')
    {'a': 1}
    >>> parse_json('{"a": ' + "9" * 5001 + "}")
    Traceback (most recent call last):
    ...
    analyzer.corpus.files.NotJSON: a number of 5,001 digits, more than the 4,300 that can be read
    """
    try:
        return json.loads(text, **options)
    except json.JSONDecodeError as error:
        raise Malformed(f"not JSON ({error.msg} at column {error.colno:,})") from None
    except NotJSON:  # said by a hook (unique_keys)
        raise
    except RecursionError:
        raise NotJSON("nested too deeply to be read") from None
    except ValueError as error:  # int() refusing a number's digits
        raise NotJSON(too_many_digits(error) or f"not JSON ({error})") from None


def too_many_digits(error: ValueError) -> str | None:
    """What a reader (json, tomllib) that met a number of more digits than Python converts
    (4,300) says, in words; None for another ValueError.

    >>> try:
    ...     int("9" * 5001)
    ... except ValueError as error:
    ...     too_many_digits(error)
    'a number of 5,001 digits, more than the 4,300 that can be read'
    """
    limit = sys.get_int_max_str_digits()
    digits = next((word for word in str(error).replace(";", " ").split()
                   if word.isdigit() and limit and int(word) > limit), None)
    if digits is None or "digits" not in str(error):
        return None
    return f"a number of {int(digits):,} digits, more than the {limit:,} that can be read"


def read_text(path: Path) -> str:
    """The file's text; CorpusError naming the file (and byte offset) if it is not UTF-8 text.

    A UTF-8 byte order mark is dropped and CRLF becomes LF. UTF-16 and UTF-32 files are
    recognised and refused with the command that converts them.
    """
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CorpusError(f"{path}: cannot read ({error.strerror})") from None
    compressed = compression_of(data)
    if compressed:  # a training source's files may be; a corpus's are read as they are
        raise CorpusError(f"{path}: {compressed}-compressed; a corpus file is read as it is: "
                          f"decompress it first ({DECOMPRESS[compressed]} {path})")
    encoding = wide_encoding(data)
    if encoding:
        raise CorpusError(f"{path}: {encoding} text; analyzer reads UTF-8. Convert it, e.g. "
                          f"iconv -f {encoding} -t UTF-8 {path} > {path.stem}.utf8{path.suffix}")
    if b"\x00" in data:
        raise CorpusError(f"{path}: not a text file (NUL byte at offset {data.index(0)})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CorpusError(f"{path}: not valid UTF-8 at byte offset {error.start} "
                          f"(byte 0x{data[error.start]:02x})") from None
    return text.removeprefix("\ufeff").replace("\r\n", "\n")


def _is_utf8_text(sample: bytes) -> bool:
    """Whether the bytes are UTF-8 (a character cut at the sample's end allowed) of readable
    text, NULs aside (UTF-16 of Cyrillic is valid UTF-8 too, but of control characters)."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
    except UnicodeDecodeError:
        return False
    text = text.replace("\x00", "")
    return sum(char.isprintable() or char in "\t\r\n" for char in text) >= 0.95 * len(text)


def wide_encoding(data: bytes) -> str | None:
    """'UTF-16LE', 'UTF-32BE', ... when the bytes look like UTF-16 or UTF-32 text, else None.

    By the byte order mark; without one, when the bytes hold zeros (UTF-8 text never does) and
    decode in that encoding to text that is nearly all printable, with some ASCII in it (spaces,
    line breaks, digits: what real text has and random bytes do not).

    >>> wide_encoding("hello".encode("utf-16-le"))
    'UTF-16LE'
    >>> wide_encoding("привет мир".encode("utf-16-be"))
    'UTF-16BE'
    >>> wide_encoding("hello".encode("utf-8")) is None
    True
    >>> wide_encoding(b"ab\\x00cdefg\\n") is None  # UTF-8 with a NUL: not wide text
    True
    """
    for mark, name in _BYTE_ORDER_MARKS:
        if data.startswith(mark):
            return name
    if b"\x00" not in data:
        return None
    sample = data[:4096]
    if sample.count(0) < len(sample) // 4 and _is_utf8_text(sample):
        return None  # UTF-8 text with a stray NUL or two (wide text of ASCII is half zeros)
    for name, width in (("UTF-32LE", 4), ("UTF-32BE", 4), ("UTF-16LE", 2), ("UTF-16BE", 2)):
        try:
            text = sample[: len(sample) - len(sample) % width].decode(name)
        except UnicodeDecodeError:
            continue
        readable = sum(char.isprintable() or char in "\t\r\n" for char in text)
        ascii_chars = sum(char < "\x80" for char in text)
        if len(text) >= 4 and readable >= 0.95 * len(text) and ascii_chars >= 0.1 * len(text):
            return name
    return None
