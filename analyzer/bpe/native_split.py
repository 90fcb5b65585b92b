"""The built-in pre-tokenizers in compiled code (analyzer/bpe/engine/split.c): exactly
`regex.findall`'s chunks for `words`, `gpt2`, `cl100k`, `o200k`, `llama3` and `superbpe`, five
to nine times faster, and the distinct chunks gathered and counted in the same pass.

The character classes are read out of the installed `regex` module when first needed (one
pass of each property over every code point, about 0.1 s), so they follow its Unicode version,
whatever it is; `unicode_tables()` gives them. `ANALYZER_ENGINE=python`, or a build without the
compiled engine, leaves every pre-tokenizer on `regex`: the same chunks, slower.

>>> available() in (True, False)
True
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import regex

from . import choice
from .threads import default_threads

PATTERN_NUMBERS = {"words": 0, "gpt2": 1, "cl100k": 2, "o200k": 3, "llama3": 4, "superbpe": 5}
"""The built-in pre-tokenizers split.c writes out, numbered as its SPLIT_* enum."""

PRODUCTION_PATTERNS = {
    "qwen": (6, r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"""
                r"""[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""),
    "tekken": (7, r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
                  r"""|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
                  r"""|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""),
    "digits": (8, r"\p{N}"),
    "numbers": (9, r"\p{N}{1,3}"),
    "kana-han": (10, "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"),
    "deepseek": (11, r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+"""
                     r"""|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
                     r"""| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""),
    "metaspace": (12, "\u2581*[^\u2581]+|\u2581+"),
}
"""The further patterns split.c writes out, for production tokenizers' pre-tokenizers (number,
the pattern as `regex` spells it): Qwen's (llama3's with one digit at a time), Mistral
Tekken's (o200k's without contractions, one digit at a time), Hugging Face's Digits with
individual digits, DeepSeek V3's three splits, and a SentencePiece-made model's text cut
before each run of its space, "▁" (where its vocabulary lets no merge cross the cut)."""

CLASSES = {  # bit: the class, as the built-in patterns spell it
    1: r"\s",
    2: r"\p{L}",
    4: r"\p{N}",
    8: r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
    16: r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",
    32: r"\p{P}",
    64: r"\p{S}",
    128: r"\p{M}",
}
"""split.c's CLASS_* bits."""

PROPERTIES = {r"\s": 1, r"\p{L}": 2, r"\p{N}": 4, r"\p{Lu}": 8, r"\p{Lt}": 8, r"\p{Ll}": 16,
              r"\p{Lm}": 8 | 16, r"\p{Lo}": 8 | 16, r"\p{M}": 8 | 16 | 128, r"\p{P}": 32,
              r"\p{S}": 64}
"""The same bits, read one property at a time (a single property is matched about ten times
faster than a class of several): each property's code points get these bits."""

CONTRACTION_LETTERS = "sdmtlvre"
"""The letters of the contractions ('s, 't, 're, 've, 'm, 'll, 'd), matched under (?i)."""

CODE_POINTS = 0x110000


@dataclass(frozen=True)
class UnicodeTables:
    classes: bytes
    """One byte per code point: its CLASSES bits."""
    folds: bytes
    """uint32 pairs: a code point (?i) matches to a contraction letter, and that letter."""


def tables_from(members: dict[str, str], folds: dict[str, str]) -> UnicodeTables:
    """Tables from the code points of each property (`PROPERTIES`' keys, each a str of its
    members) and of each contraction letter's `(?i)` variants (`CONTRACTION_LETTERS`), however
    they were found: read out of a library that counts with its own Unicode version.

    >>> tables_from({r"\\p{L}": "ab"}, {"s": "sS"}).classes[ord("b")]
    2
    """
    classes = bytearray(CODE_POINTS)
    for pattern, bits in PROPERTIES.items():
        for char in members.get(pattern, ""):
            classes[ord(char)] |= bits
    pairs = array("I")
    for letter in CONTRACTION_LETTERS:
        for variant in folds.get(letter, ""):
            pairs.extend((ord(variant), ord(letter)))
    return UnicodeTables(bytes(classes), pairs.tobytes())


@lru_cache(maxsize=1)
def unicode_tables() -> UnicodeTables:
    """The classes of every code point, and the contraction letters' case variants, as the
    installed `regex` module has them.

    >>> tables = unicode_tables()
    >>> tables.classes[ord("a")], tables.classes[ord("5")], tables.classes[ord(" ")]
    (18, 4, 1)
    """
    # every code point in one string (lone surrogates included: a str may hold them)
    every = array("I", range(CODE_POINTS)).tobytes().decode("utf-32-le", "surrogatepass")
    classes = 0
    for pattern, bits in PROPERTIES.items():
        marked = bytearray(CODE_POINTS)  # the bits at each code point of the property, 0 elsewhere
        mark = bytes([bits])
        for match in regex.finditer(f"{pattern}+", every):
            start, end = match.span()
            marked[start:end] = mark * (end - start)
        classes |= int.from_bytes(marked, "big")  # bytes OR'ed as one big number
    pairs = array("I")
    variants = regex.findall(f"(?i)[{CONTRACTION_LETTERS}]", every)  # one pass, then which letter
    for letter in CONTRACTION_LETTERS:
        for variant in variants:
            if regex.fullmatch(f"(?i){letter}", variant):
                pairs.extend((ord(variant), ord(letter)))
    return UnicodeTables(classes.to_bytes(CODE_POINTS, "big"), pairs.tobytes())


def fold_pairs(tables: UnicodeTables) -> list[tuple[int, int]]:
    """`tables.folds` as (code point, letter) pairs.

    >>> (0x17F, ord("s")) in fold_pairs(unicode_tables())  # LATIN SMALL LETTER LONG S
    True
    """
    values = array("I")
    values.frombytes(tables.folds)
    return list(zip(values[::2], values[1::2]))


def available() -> bool:
    """Whether the compiled splitter runs (the engine is built and not turned off)."""
    return _engine_module() is not None


def _engine_module():
    return choice.extension()


def split(text: str, name: str) -> list[str] | None:
    """The text's chunks under a built-in pre-tokenizer; None when the pattern would lose a
    character (the caller then lets `regex` say where).

    >>> split("I'm 12345 km", "cl100k") if available() else ["I", "'m", " ", "123", "45", " km"]
    ['I', "'m", ' ', '123', '45', ' km']
    """
    tables = unicode_tables()
    return _engine_module().split_text(text, PATTERN_NUMBERS[name], tables.classes, tables.folds)


@dataclass
class NativeChunks:
    chunks: list[str]
    counts: array
    """int64 per distinct chunk."""
    ids: array | None
    """uint32 per occurrence: its chunk (None unless asked)."""
    offsets: array | None
    """int64 per text, and one more: where its ids start (None unless asked)."""
    lost_text: int
    """The first text the pattern would lose a character of, or -1."""


def chunk_texts(texts: Sequence[str], name: str, weights: Sequence[int] | None = None,
                keep_ids: bool = True, threads: int | None = None) -> NativeChunks:
    """Every text's chunks under a built-in pre-tokenizer, gathered: the distinct chunks in
    order of first appearance and their occurrences (weights applied), and (`keep_ids`) each
    text's chunk ids. On `threads` threads (default: `threads.default_threads`), the same
    result for any number."""
    tables = unicode_tables()
    text_list = texts if isinstance(texts, (list, tuple)) else list(texts)
    found = _engine_module().chunk_texts(
        text_list, PATTERN_NUMBERS[name], tables.classes, tables.folds,
        array("q", weights) if weights is not None else None, keep_ids,
        threads or default_threads(text_list))
    chunks, counts_blob, ids_blob, offsets_blob, lost = found
    counts = array("q")
    counts.frombytes(counts_blob)
    ids = offsets = None
    if ids_blob is not None:
        ids, offsets = array("I"), array("q")
        ids.frombytes(ids_blob)
        offsets.frombytes(offsets_blob)
    return NativeChunks(chunks, counts, ids, offsets, lost)


def count_into(counter, texts: Sequence[str], name: str, first: int = 0,
               threads: int | None = None) -> bool:
    """The texts' chunks under a built-in pre-tokenizer counted into a compiled
    `ChunkCounter` (the n-th distinct chunk's order key `first + n`), with no Python string
    made per chunk; False, with nothing counted, when the pattern would lose a character (the
    caller then lets `regex` say where)."""
    tables = unicode_tables()
    text_list = texts if isinstance(texts, (list, tuple)) else list(texts)
    lost = counter.count_texts(text_list, PATTERN_NUMBERS[name], tables.classes, tables.folds,
                               first, threads or default_threads(text_list))
    return lost < 0



def count_utf8_into(counter, data: bytes, starts, ends, name: str, first: int = 0) -> bool:
    """`count_into` for documents given as UTF-8 bytes, the k-th `data[starts[k]:ends[k]]`
    (int64 offsets), into a compiled `PartedCounter`: no Python string per document either."""
    tables = unicode_tables()
    lost = counter.count_utf8(data, starts, ends, PATTERN_NUMBERS[name], tables.classes,
                              tables.folds, first)
    return lost < 0
