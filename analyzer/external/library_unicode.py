"""The Unicode classes a tokenizer library's pre-tokenizer matches with, read out of the library.

The compiled splitter needs to know, of every code point, whether it is whitespace, a letter,
a number, a mark... (`analyzer.bpe.native_split.PROPERTIES`). The analyzer's own pre-tokenizers
follow the `regex` module, and so do their tables. A production tokenizer follows its library:
tiktoken's regular expressions (Rust's `fancy-regex`) and Hugging Face's (Oniguruma) each have
their own Unicode version, and these differ from `regex`'s where Unicode changed: a letter
added in Unicode 17 is a letter to `regex` 2026 and nothing to tiktoken 0.14; U+0295 is a
lower-case letter to both libraries and another letter to `regex`. So each library's classes
are read out of the library itself, its own engine run over the code points, property by
property, and kept (`kept`) under the library's version (a few seconds, once).

>>> sorted(PROBED)
['tiktoken', 'tokenizers']
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import regex

from analyzer.bpe.native_split import (
    CODE_POINTS,
    CONTRACTION_LETTERS,
    PROPERTIES,
    UnicodeTables,
    tables_from,
)

from .kept import keep, kept_path, locked, sealed, unsealed

SURROGATES = range(0xD800, 0xE000)
FORMAT = 1
"""Of the cache files; a new one when what is probed changes."""


def _every(codes: Iterator[int] | range) -> str:
    return "".join(chr(code) for code in codes if code not in SURROGATES)


def _stable_unassigned() -> str:
    """The code points no Unicode version has assigned to a character: unassigned (or private
    use, which never changes) in the newest Unicode this machine knows (`regex`'s). A code
    point once assigned is never unassigned, so a library of an older Unicode has none of them
    in any class; checked in one pass all the same (`_probe`)."""
    return "".join(regex.findall(r"[\p{Cn}\p{Co}]", _every(range(CODE_POINTS))))


# --- tiktoken: its findall keeps only what the pattern matches -------------------------------


def _tiktoken_matcher() -> Callable[[str, str], str]:
    import tiktoken

    ranks = {bytes([byte]): byte for byte in range(256)}

    def members(pattern: str, text: str) -> str:
        encoding = tiktoken.Encoding(f"probe {pattern}", pat_str=pattern, mergeable_ranks=ranks,
                                     special_tokens={})
        return bytes(encoding.encode_ordinary(text)).decode("utf-8")

    return members


# --- Hugging Face tokenizers: a split that removes the matches keeps what they are not -----


def _tokenizers_matcher() -> Callable[[str, str], str]:
    from tokenizers import Regex, pre_tokenizers

    def members(pattern: str, text: str) -> str:
        split = pre_tokenizers.Split(Regex(pattern), behavior="removed")
        found: list[str] = []
        for at in range(0, len(text), 4096):  # its offsets cost grows with the text's length
            part = text[at:at + 4096]
            kept = {char for piece, _ in split.pre_tokenize_str(part) for char in piece}
            found.extend(char for char in part if char not in kept)
        return "".join(found)

    return members


def _tokenizers_digits(text: str) -> str:
    """What Hugging Face's Digits(individual_digits=True) isolates (Rust's `char::is_numeric`,
    not the regular expressions' \\p{N}): each code point after an "a", so a number is a piece
    of its own and anything else joins the a's."""
    from tokenizers import pre_tokenizers

    digits = pre_tokenizers.Digits(individual_digits=True)
    found: list[str] = []
    for at in range(0, len(text), 4096):
        probe = "".join("a" + char for char in text[at:at + 4096])
        found.extend(piece for piece, _ in digits.pre_tokenize_str(probe)
                     if len(piece) == 1 and piece != "a")
    return "".join(found)


PROBED = {"tiktoken": _tiktoken_matcher, "tokenizers": _tokenizers_matcher}


def _probe(library: str) -> tuple[UnicodeTables, str | None]:
    members = PROBED[library]()
    if library == "tiktoken":  # fast: every code point
        assigned = _every(range(CODE_POINTS))
    else:  # slow: the code points some Unicode assigned; the rest checked in one pass
        unassigned = _stable_unassigned()
        if members(r"[\s\p{L}\p{N}\p{P}\p{S}\p{M}]", unassigned):
            assigned = _every(range(CODE_POINTS))  # a newer Unicode than `regex`'s: all of it
        else:
            assigned = "".join(sorted(set(_every(range(CODE_POINTS))) - set(unassigned)))
    found = {pattern: members(pattern, assigned) for pattern in PROPERTIES}
    variants = members(f"(?i)[{CONTRACTION_LETTERS}]", assigned)
    folds = {letter: "".join(v for v in variants if members(f"(?i){letter}", v)) for letter in
             CONTRACTION_LETTERS}
    digits = _tokenizers_digits(assigned) if library == "tokenizers" else None
    return tables_from(found, folds), digits


# --- Kept per library version -----------------------------------------------------------------


def _version(library: str) -> str:
    module = __import__(library)
    return str(getattr(module, "__version__", "unknown"))


def _read(path: Path) -> tuple[UnicodeTables, str | None] | None:
    try:
        found = unsealed(path.read_bytes())
    except OSError:
        return None
    if found is None:
        return None
    about, body = found
    if about.get("format") != FORMAT or not isinstance(about.get("folds"), int) \
            or len(body) != CODE_POINTS + about["folds"]:
        return None
    digits = about.get("digits")
    return UnicodeTables(body[:CODE_POINTS], body[CODE_POINTS:]), \
        digits if isinstance(digits, str) else None


@cache
def library_tables(library: str) -> tuple[UnicodeTables, str | None]:
    """The classes `library` ("tiktoken" or "tokenizers") matches with, as the splitter takes
    them, and (tokenizers) the code points its Digits pre-tokenizer takes for digits."""
    path = kept_path("unicode", f"{library}-{_version(library)}.tables")
    found = _read(path)
    if found is not None:
        return found
    with locked(path):
        found = _read(path)
        if found is not None:
            return found
        tables, digits = _probe(library)
        body = tables.classes + tables.folds
        about = {"format": FORMAT, "library": library, "version": _version(library),
                 "folds": len(tables.folds), "digits": digits}
        keep(path, sealed(about, body))
    return tables, digits
