"""Counting with a production tokenizer on the analyzer's engine: texts normalised as its
library normalises them, cut by its pre-tokenizer in the compiled splitter (with the library's
own Unicode tables), each distinct chunk encoded once by its merges, and the words its tokens
split found in the same pass. A text the engine does not take (it holds one of the library's
added tokens, or a lone surrogate the library refuses) is counted by the library itself.

    counter = EngineCounter(engine_tokenizer, library_encoder)
    counts, split = counter.count(["Hello world", "Привет, мир"])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property

import regex

from analyzer.bpe.ranked import CompiledRanked, word_spaces

from .engine_models import EngineTokenizer, normalizer_of, space_replacement, words_text_of
from .library_unicode import library_tables
from .vocabulary import split_words

Pieces = Callable[[str], list[tuple[int, bytes]]]
LibraryCount = Callable[[list[str]], list[int]]

_SURROGATE = regex.compile(r"[\ud800-\udfff]")


class EngineCounter:
    """A production tokenizer counted by the engine, equal to its library (see the module)."""

    def __init__(self, spec: EngineTokenizer, library_count: LibraryCount,
                 library_pieces: Pieces | None):
        self.spec = spec
        self._library_count = library_count
        self._library_pieces = library_pieces
        self._normalize = normalizer_of(spec.normalizer)
        # Words are runs between whitespace in the text as given. A normaliser that writes each
        # space as one other character (Gemma's "▁") leaves them where they were, if that
        # character is taken for whitespace too; any other change is rare, and such a text's
        # split words come from the library's pieces of the text as given.
        self._space = space_replacement(spec.normalizer)
        spaces = bytearray(word_spaces())
        if self._space is not None:
            spaces[ord(self._space) >> 3] |= 1 << (ord(self._space) & 7)
        self._spaces = bytes(spaces)
        self._words_text = words_text_of(spec.normalizer)
        self._raw_added = _Finder([token for token, normalized in spec.added if not normalized])
        self._normalized_added = _Finder([token for token, normalized in spec.added if normalized])
        self._unsplit = _Finder(list(spec.unsplit))

    @cached_property
    def compiled(self) -> CompiledRanked:
        """The engine's model, built at its first count (a second or less; the library's
        Unicode tables are read out of it the first time on a machine, a few seconds)."""
        tables, digits = library_tables(self.spec.library)
        return CompiledRanked(self.spec.model, self.spec.steps, tables,
                              digits if self.spec.digits else None)

    def _engine_text(self, text: str) -> str | None:
        """The text as the engine counts it (normalised), or None: the library counts it."""
        if self._raw_added.within(text):
            return None
        if not text.isascii() and _SURROGATE.search(text):
            if self.spec.surrogates != "replace":
                return None
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        if self._normalize is not None:
            text = self._normalize(text)
            if self._normalized_added.within(text):
                return None
        return text

    def _words_here(self, text: str) -> bool:
        """Whether the engine finds the text's split words: always, but where a normaliser
        writes spaces as a character the text itself holds (Gemma's "▁" in the text: then
        the library's pieces say)."""
        return self._space is None or self._space not in text

    def count(self, texts: Sequence[str], words: bool = True) -> tuple[list[int], list[int | None]]:
        """Each text's tokens, and (with `words`) how many of its words they split (None
        where that is not known: a text the library counted and whose pieces do not spell it)."""
        prepared = [self._engine_text(text) for text in texts]
        found_counts: list[int] = [0] * len(texts)
        found_split: list[int | None] = [None] * len(texts)
        whole = [k for k, ready in enumerate(prepared) if ready is not None and self._unsplit.within(ready)]
        by_steps = [k for k, ready in enumerate(prepared) if ready is not None]
        if whole:
            by_steps = sorted(set(by_steps) - set(whole))
        for indices, steps in ((by_steps, None), (whole, ())):
            if not indices:
                continue
            counts, split = self.compiled.count([prepared[k] for k in indices],  # type: ignore[misc]
                                                split_words=words, steps=steps, spaces=self._spaces)
            for at, k in enumerate(indices):
                found_counts[k] = counts[at]
                found_split[k] = split[at] if split is not None else None
        library = [k for k, ready in enumerate(prepared) if ready is None]
        for k, count in zip(library, self._library_count([texts[k] for k in library]) if library else []):
            found_counts[k] = count
        if words:
            for k, ready in enumerate(prepared):
                if ready is None or not self._words_here(texts[k]):
                    found_split[k] = self._library_split(texts[k])
        return found_counts, found_split

    def _library_split(self, text: str) -> int | None:
        if self._library_pieces is None:
            return None
        return split_words(self._words_text(text), [piece for _, piece in self._library_pieces(text)])

    def encode(self, text: str) -> list[int] | None:
        """The text's tokens from the engine, or None where the library would count it."""
        ready = self._engine_text(text)
        if ready is None:
            return None
        return self.compiled.encode(ready, steps=() if self._unsplit.within(ready) else None)


class _Finder:
    """Whether a text holds any of some strings: a test of their first characters first (most
    texts hold none), then a search."""

    def __init__(self, strings: list[str]):
        strings = sorted(set(strings), key=len, reverse=True)
        self._first = sorted({string[0] for string in strings})
        self._pattern = regex.compile("|".join(map(regex.escape, strings))) if strings else None

    def within(self, text: str) -> bool:
        return self._pattern is not None and any(char in text for char in self._first) \
            and self._pattern.search(text) is not None
