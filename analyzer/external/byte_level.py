"""How byte-level vocabularies write bytes as text: GPT-2's alphabet (each byte a printable
character, as Hugging Face's ByteLevel uses it) and the `<0xAB>` tokens of byte fallback.

>>> byte_level_alphabet()[ord(" ")], BYTE_TOKEN.fullmatch("<0x0A>").group(1)
('Ġ', '0A')
"""

from __future__ import annotations

import re


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


BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")
"""A byte-fallback token's name (SentencePiece's, and tokenizer.json models made from them)."""
