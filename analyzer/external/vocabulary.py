"""What a tokenizer's vocabulary is made of: the scripts its tokens are written in, how
much of it two tokenizers share, and how often its tokens cut a word.

A token's script is that of its letters and marks (Unicode's Script property, through `regex`):
one script, or `Mixed` when they are of several; a token with no letter (spaces, digits,
punctuation, symbols) is `None`, and one whose bytes are not whole UTF-8 characters (a piece
of a character, which byte-level vocabularies have) is `Bytes`.

>>> token_script(b" the"), token_script("ción".encode()), token_script(b" 42."), token_script(b"\\xe4")
('Latin', 'Latin', 'None', 'Bytes')
>>> token_script("Москва".encode()), token_script("日本".encode()), token_script("aж".encode())
('Cyrillic', 'Han', 'Mixed')

Two vocabularies overlap as Arnett et al. (2024) measure it: the Jaccard index of their tokens
as sets (here of the bytes each token stands for, so that two spellings of a space, `Ġ` and
`▁`, are the same token).

>>> jaccard({b"a", b"b", b"ab"}, {b"a", b"b", b"ba"})
(2, 4)

How often a tokenizer's tokens split a word is `analyzer.bpe.words.split_words`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import cache

import regex

SCRIPTS = ("Latin", "Cyrillic", "Greek", "Armenian", "Georgian", "Arabic", "Hebrew", "Syriac",
           "Thaana", "Devanagari", "Bengali", "Gurmukhi", "Gujarati", "Oriya", "Tamil", "Telugu",
           "Kannada", "Malayalam", "Sinhala", "Thai", "Lao", "Tibetan", "Myanmar", "Khmer",
           "Hangul", "Hiragana", "Katakana", "Han", "Bopomofo", "Ethiopic", "Mongolian",
           "Cherokee", "Tifinagh", "Nko", "Ol_Chiki", "Javanese", "Balinese", "Canadian_Aboriginal")
"""The scripts told apart by name; a letter of any other is `Other`."""
MIXED, NO_LETTER, BYTES, OTHER = "Mixed", "None", "Bytes", "Other"
SCRIPT_WORDS = {MIXED: "several scripts", NO_LETTER: "no letter", BYTES: "part of a character",
                OTHER: "other scripts"}
"""What a reader is shown for the stored names that are not scripts (`None` reads as a value
missing, not as spaces, digits and punctuation)."""


def script_word(script: str) -> str:
    """A token script as a reader is shown it.

    >>> script_word("None"), script_word("Ol_Chiki"), script_word("Latin")
    ('no letter', 'Ol Chiki', 'Latin')
    """
    return SCRIPT_WORDS.get(script, script.replace("_", " "))

_LETTERS = regex.compile(r"[\p{L}\p{M}]")
_SCRIPT = regex.compile("|".join(f"(?P<{name}>\\p{{Script={name}}})" for name in SCRIPTS))
_SHARED = regex.compile(r"[\p{Script=Common}\p{Script=Inherited}]")


@cache
def _char_script(char: str) -> str | None:
    """A character's script as a token's is read: None for one that says nothing (no letter
    or mark, or one every script uses: Common, Inherited)."""
    if not _LETTERS.match(char) or _SHARED.match(char):
        return None
    match = _SCRIPT.match(char)
    return match.lastgroup if match else OTHER


def token_script(token: bytes) -> str:
    """The script a token is written in (see the module's docstring)."""
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        return BYTES
    found = None
    for char in text:
        script = _char_script(char)
        if script is None:
            continue
        if found is not None and script != found:
            return MIXED
        found = script
    return found if found is not None else NO_LETTER


def script_composition(tokens: Iterable[bytes]) -> dict[str, int]:
    """How many tokens each script has, the largest first (ties by name)."""
    counts = Counter(token_script(token) for token in tokens)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def jaccard(left: set[bytes], right: set[bytes]) -> tuple[int, int]:
    """(tokens both have, tokens either has): their Jaccard index is the first over the second."""
    return len(left & right), len(left | right)


