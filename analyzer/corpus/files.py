"""Read a text file the way every format needs it: strict UTF-8, no BOM, LF line ends."""

from __future__ import annotations

from pathlib import Path

from .errors import CorpusError


def read_text(path: Path) -> str:
    """The file's text; CorpusError naming the file (and byte offset) if it is not UTF-8 text.

    A UTF-8 byte order mark is dropped and CRLF becomes LF.
    """
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CorpusError(f"{path}: cannot read ({error.strerror})") from None
    if b"\x00" in data:
        raise CorpusError(f"{path}: not a text file (NUL byte at offset {data.index(0)})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CorpusError(f"{path}: not valid UTF-8 at byte offset {error.start} "
                          f"(byte 0x{data[error.start]:02x})") from None
    return text.removeprefix("\ufeff").replace("\r\n", "\n")
