"""Ranked BPE: how production tokenizers apply their merges, written down literally.

A vocabulary this analyzer trains is replayed merge by merge, each over the whole text
(`reference.encode`). The libraries that production tokenizers ship with apply theirs
otherwise: inside one chunk, they merge one pair at a time, always the adjacent pair of lowest
rank, the leftmost among equals, and look again. A pair a merge makes can so merge at once,
before other pairs of the rank just applied. Two libraries spell this rule two ways, and both
are here, line for line, as the definitions the compiled engine (`engine/ranked.c`) is tested
against:

- tiktoken ranks byte strings: a pair's rank is the rank of the two parts' bytes joined
  (`tiktoken_parts`), and a chunk that is a token is that token, unmerged.
- Hugging Face's BPE model ranks pairs of ids, from its merges list, and keeps the candidates
  in a heap, checking a popped one is still there (`merge_all`); its `ignore_merges` looks the
  whole chunk up first, as tiktoken does.

`pair_table` writes tiktoken's ranks in the second form: every way of cutting a token into
two tokens is a pair of that token's rank. Then one rule, `merge_all`, counts both.

>>> ranks = {b"a": 0, b"b": 1, b"c": 2, b"ab": 3, b"bc": 4, b"abc": 5}
>>> tiktoken_encode(b"abcab", ranks)
[5, 3]
>>> merge_all([0, 1, 2, 0, 1], pair_table(ranks))
[5, 3]
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import choice, native_split
from .threads import default_threads
from .words import word_spaces

Pair = tuple[int, int]
MergeMap = Mapping[Pair, tuple[int, int]]
"""(left id, right id) -> (rank, the id it makes), as Hugging Face's BPE model holds it."""

NO_RANK = 2**32 - 1
"""tiktoken's Rank::MAX: no such token."""


def tiktoken_parts(piece: bytes, ranks: Mapping[bytes, int]) -> list[tuple[int, int]]:
    """tiktoken's `_byte_pair_merge`: the parts (start, rank) a piece of two or more bytes
    ends in; each part runs to the next one's start. `parts[i][1]` is the rank of part i and
    part i + 1 joined, found again for the two parts beside each merge.

    >>> [start for start, _ in tiktoken_parts(b"abc", {b"ab": 0, b"bc": 1})][:-1]
    [0, 2]
    """
    parts = []
    min_rank, min_at = NO_RANK, -1
    for i in range(len(piece) - 1):
        rank = ranks.get(piece[i:i + 2], NO_RANK)
        if rank < min_rank:
            min_rank, min_at = rank, i
        parts.append((i, rank))
    parts.append((len(piece) - 1, NO_RANK))
    parts.append((len(piece), NO_RANK))

    def rank_after(i: int) -> int:  # the rank of parts i and i + 1 joined once i + 1 is gone
        if i + 3 < len(parts):
            return ranks.get(piece[parts[i][0]:parts[i + 3][0]], NO_RANK)
        return NO_RANK

    while min_rank != NO_RANK:
        i = min_at
        if i > 0:
            parts[i - 1] = (parts[i - 1][0], rank_after(i - 1))
        parts[i] = (parts[i][0], rank_after(i))
        del parts[i + 1]
        min_rank, min_at = NO_RANK, -1
        for j, (_, rank) in enumerate(parts[:-1]):
            if rank < min_rank:
                min_rank, min_at = rank, j
    return parts


def tiktoken_encode(piece: bytes, ranks: Mapping[bytes, int]) -> list[int]:
    """tiktoken's tokens of one piece (a chunk its pattern cut): the piece's own token if it
    is one, else its parts' tokens.

    >>> tiktoken_encode(b"ab", {b"a": 0, b"b": 1, b"ab": 2}), tiktoken_encode(b"ba", {b"a": 0, b"b": 1})
    ([2], [1, 0])
    """
    if piece in ranks:
        return [ranks[piece]]
    if len(piece) == 1:
        return [ranks[piece]]
    parts = tiktoken_parts(piece, ranks)
    return [ranks[piece[start:end]] for (start, _), (end, _) in zip(parts, parts[1:])]


def merge_all(symbols: Sequence[int], merges: MergeMap) -> list[int]:
    """Hugging Face's `Word::merge_all`: the candidates, each (rank, position, made), in a
    heap that gives the lowest rank first, then the leftmost; a popped one is merged if its
    left symbol is still there with a right neighbour that pairs with it into the same id.

    >>> merge_all([1, 1, 1], {(1, 1): (0, 2)})
    [2, 1]
    """
    ids = list(symbols)
    alive = [True] * len(ids)
    prev = list(range(-1, len(ids) - 1))
    next_ = [*range(1, len(ids)), -1]
    queue = [(merges[pair][0], i, merges[pair][1]) for i, pair in enumerate(zip(ids, ids[1:]))
             if pair in merges]
    heapq.heapify(queue)
    while queue:
        _, i, made = heapq.heappop(queue)
        if not alive[i] or next_[i] == -1:
            continue
        right = next_[i]
        found = merges.get((ids[i], ids[right]))
        if found is None or found[1] != made:
            continue  # stale: a neighbour changed since it was pushed
        ids[i] = made
        alive[right] = False
        next_[i] = next_[right]
        if next_[i] != -1:
            prev[next_[i]] = i
        if prev[i] >= 0 and (ids[prev[i]], made) in merges:
            rank, new = merges[(ids[prev[i]], made)]
            heapq.heappush(queue, (rank, prev[i], new))
        if next_[i] != -1 and (made, ids[next_[i]]) in merges:
            rank, new = merges[(made, ids[next_[i]])]
            heapq.heappush(queue, (rank, i, new))
    return [token for token, kept in zip(ids, alive) if kept]


def pair_table(ranks: Mapping[bytes, int]) -> dict[Pair, tuple[int, int]]:
    """tiktoken's ranks as pairs of ids: each token of two or more bytes is made, at its own
    rank, by every pair of tokens that spells it (tiktoken looks the joined bytes up, whichever
    two parts they came from).

    >>> sorted(pair_table({b"a": 0, b"b": 1, b"ab": 2, b"abb": 3}).items())
    [((0, 1), (2, 2)), ((2, 1), (3, 3))]
    """
    table = {}
    for token, rank in ranks.items():
        for cut in range(1, len(token)):
            left, right = ranks.get(token[:cut]), ranks.get(token[cut:])
            if left is not None and right is not None:
                table[(left, right)] = (rank, rank)
    return table


def hugging_face_symbols(word: str, vocab: Mapping[str, int], byte_fallback: bool,
                         unknown: int | None, fuse_unknown: bool) -> list[int]:
    """Hugging Face's `BPE::merge_word` before its merges: each character's id; a character
    not in the vocabulary as its bytes' `<0xAB>` tokens (byte fallback, when every one is
    there), else the unknown token (runs of them fused into one when `fuse_unknown`), else
    nothing.

    >>> hugging_face_symbols("ab?", {"a": 0, "b": 1, "<0x3F>": 2}, True, None, False)
    [0, 1, 2]
    """
    symbols: list[int] = []
    pending_unknown = False
    for char in word:
        if char in vocab:
            if pending_unknown:
                symbols.append(unknown)  # type: ignore[arg-type]  # set only when not None
                pending_unknown = False
            symbols.append(vocab[char])
            continue
        if byte_fallback:
            fallback = [vocab.get(f"<0x{byte:02X}>") for byte in char.encode("utf-8")]
            if all(token is not None for token in fallback):
                symbols.extend(fallback)  # type: ignore[arg-type]
                continue
        if unknown is not None:
            if pending_unknown and not fuse_unknown:
                symbols.append(unknown)
            pending_unknown = True
    if pending_unknown:
        symbols.append(unknown)  # type: ignore[arg-type]
    return symbols


@dataclass(frozen=True)
class RankedModel:
    """A production tokenizer's BPE as the compiled engine takes it (built from its files by
    `analyzer.external.engine_models`).

    `pieces[i]` is the bytes a chunk (or, for "characters", a character) must be to be
    token i (None: never, e.g. a special token); `merges` are (left, right, rank, made), or,
    `derived`, the tiktoken ranks' `pair_table` of the pieces (each piece's rank its id); a
    chunk starts as one symbol per byte (`symbols` "bytes": `byte_ids[b]` for byte b) or per
    character ("characters": the character's token, else its bytes' `byte_ids`, byte
    fallback); `whole_first`: a chunk that is a token is that token, unmerged (tiktoken, and
    Hugging Face's `ignore_merges`)."""

    pieces: Sequence[bytes | None]
    merges: Sequence[tuple[int, int, int, int]]
    byte_ids: Sequence[int]
    symbols: str = "bytes"
    whole_first: bool = False
    derived: bool = False

    def merge_map(self) -> dict[Pair, tuple[int, int]]:
        """The merges as `merge_all` takes them (a pair given twice keeps its last, as Hugging
        Face's map does)."""
        if self.derived:
            return pair_table({piece: i for i, piece in enumerate(self.pieces) if piece})
        return {(left, right): (rank, made) for left, right, rank, made in self.merges}

    def encode(self, chunk: bytes) -> list[int]:
        """One chunk's ids, by the definitions above (slow; the engine's oracle).

        >>> model = RankedModel([b"a", b"b", b"ab"], [(0, 1, 0, 2)], [0] * 97 + [0, 1] + [0] * 157)
        >>> model.encode(b"abab")
        [2, 2]
        """
        if self.whole_first:
            whole = self._token_of(chunk)
            if whole is not None:
                return [whole]
        if self.symbols == "bytes":
            symbols = [self.byte_ids[byte] for byte in chunk]
        else:
            symbols = []
            for char in chunk.decode("utf-8"):
                token = self._token_of(char.encode("utf-8"))
                symbols.extend([token] if token is not None else
                               [self.byte_ids[byte] for byte in char.encode("utf-8")])
        return merge_all(symbols, self.merge_map())

    def _token_of(self, data: bytes) -> int | None:
        index = getattr(self, "_index", None)
        if index is None:
            index = {piece: i for i, piece in enumerate(self.pieces) if piece is not None}
            object.__setattr__(self, "_index", index)
        return index.get(data)


# --- The compiled engine -------------------------------------------------------------------


Step = tuple[str, bool]
"""A pre-tokenizer step: a pattern of `native_split` (built-in or production) and whether the
text between its matches is kept (`around`, Hugging Face's isolated split) or dropped
(tiktoken's findall)."""


def step_numbers(steps: Sequence[Step]) -> bytes:
    """The steps as the engine takes them: int32 (pattern, around) pairs.

    >>> list(array("i", step_numbers([("o200k", False)])))
    [3, 0]
    """
    numbers = array("i")
    for name, around in steps:
        number = native_split.PATTERN_NUMBERS.get(name)
        if number is None:
            number = native_split.PRODUCTION_PATTERNS[name][0]
        numbers.extend((number, int(around)))
    return numbers.tobytes()


def split_steps(text: str, steps: Sequence[Step], tables: native_split.UnicodeTables,
                digits: bytes | None = None) -> list[str]:
    """The text's chunks under pre-tokenizer steps, as the compiled splitter cuts them.

    >>> split_steps("abc 123", [("numbers", True)], native_split.unicode_tables()) \\
    ...     if native_split.available() else ["abc ", "123"]
    ['abc ', '123']
    """
    engine = choice.extension()
    if engine is None:
        raise RuntimeError("the compiled engine is not built")
    return engine.split_steps(text, step_numbers(steps), tables.classes, tables.folds, digits)


def digit_bits(digits: str) -> bytes:
    """A set of code points as the splitter's bitset (a bit per code point)."""
    bits = bytearray(native_split.CODE_POINTS // 8)
    for char in digits:
        bits[ord(char) >> 3] |= 1 << (ord(char) & 7)
    return bytes(bits)


@dataclass(frozen=True)
class PackedModel:
    """A `RankedModel` as the engine takes it: every token's bytes end to end (`starts`: where
    each begins, and the end), the merges as int32 (left, right, rank, made) quads (None:
    derived from the tokens), each byte's id; what is kept between runs
    (`analyzer.external.kept_engines`)."""

    pieces: bytes
    starts: array
    merges: array | None
    byte_ids: array
    characters: bool
    whole_first: bool

    @classmethod
    def of(cls, model: RankedModel) -> PackedModel:
        pieces = [piece or b"" for piece in model.pieces]
        starts = array("q", [0])
        total = 0
        for piece in pieces:
            total += len(piece)
            starts.append(total)
        merges = None
        if not model.derived:
            merges = array("i")
            for merge in model.merges:
                merges.extend(merge)
        return cls(b"".join(pieces), starts, merges, array("i", model.byte_ids),
                   model.symbols == "characters", model.whole_first)


class CompiledRanked:
    """A `RankedModel` on the compiled engine, with its pre-tokenizer's steps and the Unicode
    tables of the library it must equal; built once, then counting texts on every core."""

    def __init__(self, model: RankedModel | PackedModel, steps: Sequence[Step],
                 tables: native_split.UnicodeTables, digits: str | None = None):
        engine = choice.extension()
        if engine is None:
            raise RuntimeError("the compiled engine is not built")
        packed = model if isinstance(model, PackedModel) else PackedModel.of(model)
        self._engine = engine.RankedEncoder(packed.pieces, packed.starts, packed.merges,
                                            packed.byte_ids, packed.characters, packed.whole_first)
        self._packed = packed
        self._steps = step_numbers(steps)
        self._tables = tables
        # the Digits step's own digits (see split.c's SplitTables)
        self._digits = digit_bits(digits) if digits is not None else None

    def encode(self, text: str, steps: Sequence[Step] | None = None) -> list[int]:
        """The text's tokens (cut by `steps` instead of its own, when given)."""
        return self._engine.encode(text, self._steps if steps is None else step_numbers(steps),
                                   self._tables.classes, self._tables.folds, self._digits)

    def count(self, texts: Sequence[str], threads: int | None = None, split_words: bool = True,
              steps: Sequence[Step] | None = None,
              spaces: bytes | None = None) -> tuple[list[int], list[int] | None]:
        """Each text's tokens and, with `split_words`, how many of its words (runs between
        whitespace: `word_spaces()`, or the bitset `spaces`) a token starts inside; on
        `threads` threads (default: as many as help); cut by `steps` instead of its own, when
        given."""
        text_list = texts if isinstance(texts, list) else list(texts)
        counts_blob, split_blob = self._engine.count(
            text_list, self._steps if steps is None else step_numbers(steps), self._tables.classes,
            self._tables.folds, spaces or word_spaces(), threads or default_threads(text_list),
            split_words, self._digits)
        counts = array("q")
        counts.frombytes(counts_blob)
        split = None
        if split_blob is not None:
            split = array("q")
            split.frombytes(split_blob)
        return counts.tolist(), split.tolist() if split is not None else None

    def packed(self) -> PackedModel:
        """The model as built, its merges given (derived ones written out): to keep, and to
        build again without deriving them."""
        if self._packed.merges is not None:
            return self._packed
        merges = array("i")
        merges.frombytes(self._engine.merge_quads())
        return PackedModel(self._packed.pieces, self._packed.starts, merges, self._packed.byte_ids,
                           self._packed.characters, self._packed.whole_first)

