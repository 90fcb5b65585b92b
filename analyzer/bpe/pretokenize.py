"""Pre-tokenizers: the rule that cuts a text into chunks before BPE; merges never cross a chunk.

A pre-tokenizer is a regular expression (the third-party `regex` module, which the production
patterns need for `\\p{L}` and possessive quantifiers); a text's chunks are its non-overlapping
matches in order, `regex.findall(pattern, text)`; or, for those that split around their
matches (`superbpe`, `split:PATTERN`), the matches and the text between them. It is accepted
only where it is lossless: the chunks joined must give the text back, else `PretokenizerError`
names the text and the first character lost.

>>> resolve("words").split("Hello  world!")
['Hello', '  ', 'world!']
>>> resolve("cl100k").split("I'm 12345 km away")
['I', "'m", ' ', '123', '45', ' km', ' away']
>>> resolve("superbpe").split("New York, 2024...")
['New York, ', '202', '4', '...']
>>> resolve("none") is None
True
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

import regex

from . import native_split

NONE = "none"
SUPERBPE = "superbpe"
"""SuperBPE's stage-2 pre-tokenizer (see PRETOKENIZERS)."""
USER_PREFIX = "re:"
USER_AROUND_PREFIX = "split:"
"""`split:PATTERN`: a pattern of the user's, splitting around its matches (see `SPLIT_AROUND`)."""

# The published patterns, as the tokenizers that use them define them.
PRETOKENIZERS: dict[str, str | None] = {
    NONE: None,
    # An optional single whitespace character, then a run of non-whitespace; else a run of
    # whitespace. Lossless on any text, and neutral between scripts.
    "words": r"\s?\S+|\s+",
    # GPT-2 (OpenAI's gpt-2 encoder.py), in the faster equivalent form that tiktoken uses for
    # gpt2/r50k_base/p50k_base (tiktoken_ext/openai_public.py, r50k_pat_str).
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
    # cl100k_base (GPT-3.5, GPT-4): tiktoken_ext/openai_public.py, cl100k_base()["pat_str"].
    "cl100k": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
              r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    # o200k_base (GPT-4o): tiktoken_ext/openai_public.py, o200k_base()["pat_str"].
    "o200k": "|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]),
    # Llama 3 (Meta's llama3 tokenizer.py `pat_str`, the same in the Split pre-tokenizer of the
    # Hugging Face tokenizer.json of Meta-Llama-3).
    "llama3": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"""
              r"""[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    # SuperBPE's stage 2 (Liu et al. 2025; PythonNut/superbpe, scripts/extend_tokenizer.sh):
    # numbers of up to three digits, runs of two or more punctuation marks, and runs of spaces
    # before a space or the end are cut out; everything else, spaces between words included,
    # is one chunk, so merges may cross words ("superwords"). It splits around its matches.
    SUPERBPE: r"""\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)""",
}
"""Built-in pre-tokenizers by name (`none`: no splitting, each text is one chunk)."""

SPLIT_AROUND = frozenset({SUPERBPE})
"""Built-in pre-tokenizers that split around their matches (every match is a chunk, and so is
every stretch of text between matches: Hugging Face's `Split(behavior="isolated")`), instead of
keeping only the matches. Lossless by construction."""


USER_PATTERN_TIMEOUT = 1.0
"""Seconds a pattern of the user's (re:...) may take on one text. A pattern that backtracks
catastrophically (`(a|a)*$` on forty a's and a `!`) would otherwise run for hours; with the
bound it is refused, naming the text. The built-in patterns are linear and unbounded."""


class PretokenizerError(ValueError):
    """A pattern that is not a regular expression, a name that is not a pre-tokenizer, or a
    pre-tokenizer that loses text or runs away on one; the message says which, and where.

    `name` is the pre-tokenizer, `text_index` the text it failed on (None when no text was
    involved), `failure` what it did there ("loses text", "runs away") and `detail` where or
    why, without the rest of the message."""

    def __init__(self, message: str, *, name: str | None = None, text_index: int | None = None,
                 failure: str | None = None, detail: str | None = None):
        super().__init__(message)
        self.name, self.text_index, self.failure, self.detail = name, text_index, failure, detail


@dataclass(frozen=True)
class Pretokenizer:
    name: str
    """As given: a built-in name or `re:<pattern>`."""
    pattern: str
    compiled: regex.Pattern = field(repr=False, compare=False)
    timeout: float | None = None
    """The bound on one text's split (a user's pattern), in seconds; None: no bound."""
    around: bool = False
    """Split around the matches (they and the text between them are the chunks) instead of
    keeping only the matches."""

    @property
    def native(self) -> bool:
        """Whether compiled code splits for it (a built-in pattern, the engine built): the same
        chunks as `regex`, faster (`analyzer.bpe.native_split`)."""
        return (self.name in native_split.PATTERN_NUMBERS and self.pattern == PRETOKENIZERS[self.name]
                and native_split.available())

    def split(self, text: str, index: int = 0) -> list[str]:
        """The text's chunks; PretokenizerError if they do not give the text back, or if the
        pattern takes longer than its bound on this text."""
        if self.native:
            chunks = native_split.split(text, self.name)
            if chunks is not None:  # None: it loses a character, which `regex` will name
                return chunks
        return self.split_with_regex(text, index)

    def split_with_regex(self, text: str, index: int = 0) -> list[str]:
        """`split`, always by the `regex` module (the definition the compiled splitter is
        tested against)."""
        try:
            if self.around:
                chunks = _split_around(self.compiled, text, self.timeout)
            else:
                chunks = self.compiled.findall(text, timeout=self.timeout)
        except TimeoutError:
            detail = (f"the pattern ran for more than {self.timeout:g} s on this one text of "
                      f"{len(text):,} characters (catastrophic backtracking: a nested or "
                      "overlapping repetition such as (a|a)* or (a+)+)")
            raise PretokenizerError(f"pre-tokenizer {self.name} runs away: text {index}, {detail}",
                                    name=self.name, text_index=index, failure="runs away",
                                    detail=detail) from None
        if sum(map(len, chunks)) != len(text) or "".join(chunks) != text:
            detail = _first_loss(text, chunks)
            raise PretokenizerError(f"pre-tokenizer {self.name} loses text: text {index}, {detail}",
                                    name=self.name, text_index=index, failure="loses text",
                                    detail=detail)
        return chunks


class Splitter(Protocol):
    """What cuts texts into chunks: a `Pretokenizer`, or a production tokenizer's own
    pre-tokenizer (a base to extend, `analyzer.external.extension`)."""

    def split(self, text: str, index: int = 0) -> list[str]: ...


def splitter(spec: str | Splitter | None) -> Splitter | None:
    """`resolve` for a name; a splitter given as an object is itself (training over a
    production tokenizer's chunks)."""
    return resolve(spec) if spec is None or isinstance(spec, str) else spec


def resolve(spec: str | None) -> Pretokenizer | None:
    """The pre-tokenizer a name stands for (None for `none`): a built-in name, or `re:` and a
    pattern of the user's. PretokenizerError says what is wrong with anything else."""
    if spec is None or spec == NONE:
        return None
    if spec in PRETOKENIZERS:
        pattern = PRETOKENIZERS[spec]
        assert pattern is not None
        return Pretokenizer(spec, pattern, _compile(spec, pattern), around=spec in SPLIT_AROUND)
    for prefix in (USER_PREFIX, USER_AROUND_PREFIX):
        if spec.startswith(prefix):
            pattern = spec[len(prefix):]
            if not pattern:
                raise PretokenizerError(f"pre-tokenizer {spec!r} has an empty pattern")
            compiled = _compile(spec, pattern)
            if compiled.groups:
                # findall would return the groups' text, not the chunks (tuples, with two or more)
                raise PretokenizerError(f"pre-tokenizer {spec}: the pattern has {compiled.groups} "
                                        "capturing group(s); a chunk is a whole match, so write "
                                        "groups as (?:...)")
            return Pretokenizer(spec, pattern, compiled, timeout=USER_PATTERN_TIMEOUT,
                                around=prefix == USER_AROUND_PREFIX)
    raise PretokenizerError(f"unknown pre-tokenizer {spec!r}: use one of "
                            f"{', '.join(PRETOKENIZERS)}, re:PATTERN for a regular expression "
                            "(its matches are the chunks), or split:PATTERN (split around its "
                            "matches)")


@dataclass
class Chunked:
    """Texts cut into chunks: the distinct chunks (in order of first appearance), how often each
    occurs (texts' weights applied), and each text's chunks as indices into `chunks`: those of
    text k are `ids[offsets[k]:offsets[k + 1]]` (`of_text` gives them as lists)."""

    chunks: list[str]
    counts: list[int]
    ids: array
    """uint32 per occurrence ("I"): its index in `chunks`."""
    offsets: array
    """int64 per text and one more ("q"): where the text's ids start."""

    @property
    def of_text(self) -> list[list[int]]:
        """For each text, the index of each of its chunks."""
        ids, offsets = self.ids, self.offsets
        return [ids[offsets[k]:offsets[k + 1]].tolist() for k in range(len(offsets) - 1)]


def chunk_texts(texts: Sequence[str], pretokenizer: Splitter,
                weights: Sequence[int] | None = None) -> Chunked:
    """Every text's chunks, checked lossless, counted once per distinct chunk.

    >>> chunked = chunk_texts(["a b", "b a"], resolve("words"))
    >>> chunked.chunks, chunked.counts, chunked.of_text
    (['a', ' b', 'b', ' a'], [1, 1, 1, 1], [[0, 1], [2, 3]])
    """
    found = _gathered_natively(texts, pretokenizer, weights, keep_ids=True)
    if found is not None:
        assert found.ids is not None and found.offsets is not None  # asked for
        return Chunked(found.chunks, found.counts.tolist(), found.ids, found.offsets)
    index: dict[str, int] = {}
    counts: list[int] = []
    ids, offsets = array("I"), array("q", [0])
    for position, text in enumerate(texts):
        weight = 1 if weights is None else weights[position]
        for chunk in pretokenizer.split(text, position):
            number = index.get(chunk)
            if number is None:
                number = index[chunk] = len(counts)
                counts.append(0)
            counts[number] += weight
            ids.append(number)
        offsets.append(len(ids))
    return Chunked(list(index), counts, ids, offsets)


def distinct_chunks(texts: Sequence[str], pretokenizer: Splitter,
                    weights: Sequence[int] | None = None) -> tuple[list[str], Sequence[int]]:
    """`chunk_texts`'s distinct chunks and their counts alone (what training needs), without
    keeping each text's chunk ids: on a gigabyte of text those would take 600 MB.

    The counts are an int64 `array` where compiled code gathered them (no Python int per
    chunk), else a list.

    >>> chunks, counts = distinct_chunks(["a b", "b a"], resolve("words"), [2, 1])
    >>> chunks, list(counts)
    (['a', ' b', 'b', ' a'], [2, 2, 1, 1])
    """
    found = _gathered_natively(texts, pretokenizer, weights, keep_ids=False)
    if found is not None:
        return found.chunks, found.counts  # an int64 array: no Python int per chunk
    chunked = chunk_texts(texts, pretokenizer, weights)
    return chunked.chunks, chunked.counts


def _gathered_natively(texts: Sequence[str], pretokenizer: Splitter,
                       weights: Sequence[int] | None,
                       keep_ids: bool) -> native_split.NativeChunks | None:
    """The chunks gathered by compiled code, or None where it does not split (a user's
    pattern, a production tokenizer's splitter, no compiler) and the caller must."""
    if not (isinstance(pretokenizer, Pretokenizer) and pretokenizer.native):
        return None
    found = native_split.chunk_texts(texts, pretokenizer.name, weights, keep_ids)
    if found.lost_text < 0:
        return found
    # A character in no chunk: `regex` says which (PretokenizerError). Were it to find none,
    # its own chunks are the definition, so the caller gathers them.
    pretokenizer.split_with_regex(texts[found.lost_text], found.lost_text)
    return None


def _split_around(compiled: regex.Pattern, text: str, timeout: float | None) -> list[str]:
    """The matches and the stretches between them, in order (empty matches cut nothing);
    exactly `reference.pretokenize(text, pattern, around=True)`."""
    chunks = []
    end = 0
    for match in compiled.finditer(text, timeout=timeout):
        start, stop = match.span()
        if start == stop:
            continue
        if start > end:
            chunks.append(text[end:start])
        chunks.append(match.group())
        end = stop
    if end < len(text):
        chunks.append(text[end:])
    return chunks


def _compile(name: str, pattern: str) -> regex.Pattern:
    try:
        return _compiled(pattern)
    except regex.error as error:
        raise PretokenizerError(f"pre-tokenizer {name}: not a regular expression ({error})") from None


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> regex.Pattern:
    return regex.compile(pattern)


def _first_loss(text: str, chunks: Iterable[str]) -> str:
    """Where the chunks first stop spelling the text."""
    position = 0
    for chunk in chunks:
        found = text.find(chunk, position)
        if found != position:
            break
        position += len(chunk)
    lost = text[position:position + 20]
    return f"character {position} ({lost!r}) is in no chunk"
