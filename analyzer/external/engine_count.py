"""Counting with a production tokenizer on the analyzer's engine: texts normalised as its
library normalises them, cut by its pre-tokenizer in the compiled splitter (with the library's
own Unicode tables), each distinct chunk encoded once by its merges, and the words its tokens
split found in the same pass. A text the engine does not take (it holds one of the library's
added tokens, or a lone surrogate the library refuses) is counted by the library itself.

    counter = EngineCounter(engine_tokenizer, library_encoder)
    counts, split = counter.count(["Hello world", "Привет, мир"])
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from functools import cached_property

import regex

from analyzer.bpe.ranked import CompiledRanked, PackedModel
from analyzer.bpe.words import Spellings, split_words, word_spaces

from .engine_models import EngineTokenizer, normalizer_of, space_replacement, words_text_of
from .library_unicode import library_tables

Pieces = Callable[[str], list[tuple[int, bytes]]]
LibraryCount = Callable[[list[str]], list[int]]

_SURROGATE = regex.compile(r"[\ud800-\udfff]")


Parts = list  # of str (text to count) and int (an added token's id)


class EngineCounter:
    """A production tokenizer counted by the engine, equal to its library (see the module)."""

    def __init__(self, spec: EngineTokenizer, library_count: LibraryCount,
                 library_pieces: Pieces | None,
                 built: Callable[[CompiledRanked], None] | None = None):
        self.spec = spec
        self._built = built
        self._library_count = library_count
        self._library_pieces = library_pieces
        self._normalize = normalizer_of(spec.normalizer)
        # Words are runs between whitespace in the text as its tokens spell it (`words_text`).
        # A normaliser that writes each space as one other character (Gemma's "▁") leaves them
        # where they were, if that character is taken for whitespace too; a text that holds
        # that character itself has its split words from its tokens' bytes (`_parts_measured`).
        self._space = space_replacement(spec.normalizer)
        spaces = bytearray(word_spaces())
        if self._space is not None:
            spaces[ord(self._space) >> 3] |= 1 << (ord(self._space) & 7)
        self._spaces = bytes(spaces)
        self._words_text = words_text_of(spec.normalizer)
        self._raw_added = _Finder({token: i for token, normalized, i in spec.added if not normalized})
        # Hugging Face looks for a normalised added token as its content normalised (a
        # Lowercase normaliser's "Abc" is found as "abc" in the normalised text).
        normalize = self._normalize or str
        self._normalized_added = _Finder({normalize(token): i for token, normalized, i in spec.added
                                          if normalized})
        self._unsplit = _Finder(dict.fromkeys(spec.unsplit, -1))
        # What sets a text apart, to be counted alone: a lone surrogate, the first character of
        # an added token looked for in the text as given (or, with no normaliser, of any), the
        # character a normaliser writes spaces as (a text that holds it itself).
        firsts = set(self._raw_added.first)
        if self._normalize is None:
            firsts.update(self._normalized_added.first)
        if self._space is not None:
            firsts.add(self._space)
        self._attention = regex.compile("[\\ud800-\\udfff" + "".join(map(regex.escape, sorted(firsts)))
                                        + "]")

    @cached_property
    def compiled(self) -> CompiledRanked:
        """The engine's model, built at its first count (a second or less; the library's
        Unicode tables are read out of it the first time on a machine, a few seconds)."""
        tables, digits = library_tables(self.spec.library)
        compiled = CompiledRanked(self.spec.model, self.spec.steps, tables,
                                  digits if self.spec.digits else None)
        if self._built is not None:  # e.g. kept for the next run (kept_engines)
            self._built(compiled)
        return compiled

    def _prepare(self, text: str) -> str | Parts | None:
        """The text as the engine counts it: one text (normalised), or parts of it to count
        and the ids of the added tokens Hugging Face's added vocabulary takes out between them
        (each part normalised on its own, as the library does); None: the library counts it
        (a lone surrogate, which it refuses)."""
        if not text.isascii() and _SURROGATE.search(text):
            if self.spec.surrogates != "replace":
                return None
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        if self._raw_added.within(text):
            parts: Parts = []
            for part in self._raw_added.split(text):
                if isinstance(part, str):
                    normalized = self._normalize(part) if self._normalize else part
                    parts += self._normalized_added.split(normalized)
                else:
                    parts.append(part)
            return parts
        if self._normalize is not None:
            text = self._normalize(text)
        if self._normalized_added.within(text):
            return self._normalized_added.split(text)
        return text

    def count(self, texts: Sequence[str], words: bool = True) -> tuple[list[int], list[int | None]]:
        """Each text's tokens, and (with `words`) how many of its words they split (None
        where that is not known: a text the library counted and whose pieces do not spell it).

        Most texts go to the engine as they are, or normalised, all at once; the few that need
        more (a lone surrogate, an added token, the character a normaliser writes spaces as)
        are found in one search over all the texts, and counted one by one."""
        texts = list(texts)
        found_counts: list[int] = [0] * len(texts)
        found_split: list[int | None] = [None] * len(texts)
        apart = set(holding(texts, self._attention))
        plain = [k for k in range(len(texts)) if k not in apart]
        ready = [texts[k] for k in plain]
        if self._normalize is not None:
            ready = self._normalize.batch(ready)
            later = holding(ready, self._normalized_added.first_pattern)
            later = [i for i in later if self._normalized_added.within(ready[i])]
            if later:  # a normalised added token: counted one by one too
                apart.update(plain[i] for i in later)
                kept = [i for i in range(len(plain)) if plain[i] not in apart]
                plain, ready = [plain[i] for i in kept], [ready[i] for i in kept]
        whole = {i for i in holding(ready, self._unsplit.first_pattern)
                 if self._unsplit.within(ready[i])}
        for indices, steps in (([i for i in range(len(plain)) if i not in whole], None),
                               (sorted(whole), ())):
            if not indices:
                continue
            counts, split = self.compiled.count([ready[i] for i in indices], split_words=words,
                                                steps=steps, spaces=self._spaces)
            for at, i in enumerate(indices):
                found_counts[plain[i]] = counts[at]
                found_split[plain[i]] = split[at] if split is not None else None
        alone, alone_ids = [], []
        for k in sorted(apart):
            prepared = self._prepare(texts[k])
            if prepared is None:  # the library refuses it (a lone surrogate): it says so
                found_counts[k] = self._library_count([texts[k]])[0]
                found_split[k] = self._library_split(texts[k]) if words else None
                continue
            ids = self._parts_encoded(prepared if isinstance(prepared, list) else [prepared])
            found_counts[k] = len(ids)
            alone.append(k)
            alone_ids.append(ids)
        if words and alone:
            for k, cut in zip(alone, self._spellings.split_words(
                    [self._words_text(texts[k]) for k in alone], alone_ids)):
                found_split[k] = cut
        return found_counts, found_split

    def _parts_encoded(self, parts: Parts) -> list[int]:
        """The tokens of a text's parts, an added token's id as it is."""
        ids: list[int] = []
        for part in parts:
            if isinstance(part, int):
                ids.append(part)
            elif part:
                ids += self.compiled.encode(part, steps=() if self._unsplit.within(part) else None)
        return ids

    @cached_property
    def _spellings(self) -> Spellings:
        """What each token stands for in the text as its words are counted on: its bytes (a
        character model's "▁" as the space it writes), an added token's text."""
        model = self.spec.model
        packed = model if isinstance(model, PackedModel) else PackedModel.of(model)
        spellings = {}
        for i in range(len(packed.starts) - 1):
            piece = packed.pieces[packed.starts[i]:packed.starts[i + 1]]
            if self._space is not None:
                piece = piece.replace(self._space.encode(), b" ")
            spellings[i] = piece
        if packed.characters:  # byte fallback: the byte each stands for
            spellings.update({i: bytes([byte]) for byte, i in enumerate(packed.byte_ids)})
        spellings.update({i: token.encode() for token, _, i in self.spec.added})
        table = [b""] * (max(spellings, default=-1) + 1)
        for i, piece in spellings.items():
            table[i] = piece
        return Spellings(table)

    def _library_split(self, text: str) -> int | None:
        if self._library_pieces is None:
            return None
        return split_words(self._words_text(text), [piece for _, piece in self._library_pieces(text)])

    def encode(self, text: str) -> list[int] | None:
        """The text's tokens from the engine, or None where the library would count it."""
        ready = self._prepare(text)
        if ready is None:
            return None
        return self._parts_encoded(ready if isinstance(ready, list) else [ready])


def holding(texts: Sequence[str], pattern: regex.Pattern | None) -> list[int]:
    """The indices of the texts in which `pattern` is found, in one search over them all
    (joined by NUL, which the patterns here never hold).

    >>> holding(["ab", "cd", "xb"], regex.compile("b"))
    [0, 2]
    """
    if pattern is None or not texts:
        return []
    joined = "\x00".join(texts)
    starts = list(itertools.accumulate((len(text) + 1 for text in texts[:-1]), initial=0))
    found: list[int] = []
    for match in pattern.finditer(joined):
        k = bisect.bisect_right(starts, match.start()) - 1
        if not found or found[-1] != k:
            found.append(k)
    return found


class _Finder:
    """Strings in a text (Hugging Face's added tokens): whether a text holds any (a test of
    their first characters first, as most texts hold none), and the text cut around them,
    leftmost and longest first, as the library's Aho-Corasick matcher cuts it."""

    def __init__(self, ids: dict[str, int]):
        strings = sorted(ids, key=len, reverse=True)
        self._ids = ids
        self.first = sorted({string[0] for string in strings})
        self.first_pattern = regex.compile("[" + "".join(map(regex.escape, self.first)) + "]") \
            if strings else None
        self._pattern = regex.compile("|".join(map(regex.escape, strings))) if strings else None

    def within(self, text: str) -> bool:
        return self._pattern is not None and self.first_pattern is not None \
            and self.first_pattern.search(text) is not None and self._pattern.search(text) is not None

    def split(self, text: str) -> Parts:
        """The text's parts between the strings, and each string's id in its place.

        >>> _Finder({"<a>": 7, "<": 8}).split("x<a>y<z")
        ['x', 7, 'y', 8, 'z']
        """
        if self._pattern is None:
            return [text]
        parts: Parts = []
        at = 0
        for match in self._pattern.finditer(text):
            if match.start() > at:
                parts.append(text[at:match.start()])
            parts.append(self._ids[match.group()])
            at = match.end()
        if at < len(text):
            parts.append(text[at:])
        return parts
