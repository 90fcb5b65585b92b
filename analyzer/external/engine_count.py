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

from analyzer.bpe.ranked import CompiledRanked, PackedModel
from analyzer.bpe.words import split_words, word_spaces

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
        self._normalized_added = _Finder({token: i for token, normalized, i in spec.added if normalized})
        self._unsplit = _Finder(dict.fromkeys(spec.unsplit, -1))

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
        where that is not known: a text the library counted and whose pieces do not spell it)."""
        prepared = [self._prepare(text) for text in texts]
        found_counts: list[int] = [0] * len(texts)
        found_split: list[int | None] = [None] * len(texts)
        plain = [k for k, ready in enumerate(prepared) if isinstance(ready, str)
                 and (self._space is None or self._space not in texts[k])]
        whole = {k for k in plain if self._unsplit.within(prepared[k])}  # type: ignore[arg-type]
        for indices, steps in (([k for k in plain if k not in whole], None), (sorted(whole), ())):
            if not indices:
                continue
            counts, split = self.compiled.count([prepared[k] for k in indices],  # type: ignore[misc]
                                                split_words=words, steps=steps, spaces=self._spaces)
            for at, k in enumerate(indices):
                found_counts[k] = counts[at]
                found_split[k] = split[at] if split is not None else None
        done = set(plain)
        library = [k for k, ready in enumerate(prepared) if ready is None]
        for k, count in zip(library, self._library_count([texts[k] for k in library]) if library else []):
            found_counts[k] = count
            found_split[k] = self._library_split(texts[k]) if words else None
        for k, ready in enumerate(prepared):
            if ready is None or k in done:
                continue
            ids = self._parts_encoded(ready if isinstance(ready, list) else [ready])
            found_counts[k] = len(ids)
            if words:
                found_split[k] = split_words(self._words_text(texts[k]), [self._spelled(i) for i in ids])
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
    def _spellings(self) -> dict[int, bytes]:
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
        return spellings

    def _spelled(self, token: int) -> bytes:
        return self._spellings.get(token, b"")

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


class _Finder:
    """Strings in a text (Hugging Face's added tokens): whether a text holds any (a test of
    their first characters first, as most texts hold none), and the text cut around them,
    leftmost and longest first, as the library's Aho-Corasick matcher cuts it."""

    def __init__(self, ids: dict[str, int]):
        strings = sorted(ids, key=len, reverse=True)
        self._ids = ids
        self._first = sorted({string[0] for string in strings})
        self._pattern = regex.compile("|".join(map(regex.escape, strings))) if strings else None

    def within(self, text: str) -> bool:
        return self._pattern is not None and any(char in text for char in self._first) \
            and self._pattern.search(text) is not None

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
