"""How byte-level vocabularies write bytes as text: GPT-2's alphabet (each byte a printable
character, as Hugging Face's ByteLevel uses it) and the `<0xAB>` tokens of byte fallback.

>>> byte_level_alphabet()[ord(" ")], BYTE_TOKEN.fullmatch("<0x0A>").group(1)
('Ġ', '0A')
>>> byte_level_bytes("Ġhi"), byte_level_bytes("▁hi")
(b' hi', None)
"""

from __future__ import annotations

import re
from functools import cache


def byte_level_alphabet() -> dict[int, str]:
    """GPT-2's byte-level alphabet, as Hugging Face's ByteLevel uses it: each byte as a
    printable character (printable Latin-1 bytes as themselves, the rest from U+0100 on)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    alphabet, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            alphabet[byte] = chr(byte)
        else:
            alphabet[byte] = chr(256 + extra)
            extra += 1
    return alphabet


@cache
def _to_latin1() -> dict[int, int]:
    """`str.translate`'s table from the alphabet's characters to the bytes they stand for (as
    Latin-1 characters); a Latin-1 character outside the alphabet goes to U+FFFF, which no
    byte is, so that a token holding one is not read as bytes."""
    table = {ord(char): byte for byte, char in byte_level_alphabet().items()}
    for code in range(256):
        table.setdefault(code, 0xFFFF)
    return table


def byte_level_bytes(token: str) -> bytes | None:
    """The bytes a byte-level token spells, or None when it holds a character outside the
    alphabet (an added token, a Metaspace model's "▁"). One `translate` and one `encode` for
    the whole token: reading 200,000-token vocabularies was 5 s of a first run here."""
    try:
        return token.translate(_to_latin1()).encode("latin-1")
    except UnicodeEncodeError:
        return None


BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")
"""A byte-fallback token's name (SentencePiece's, and tokenizer.json models made from them)."""
