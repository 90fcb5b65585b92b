"""The literal WordPiece trainer: slow, short, and the contract the compiled engine must meet.

Hugging Face's `WordPieceTrainer` is its BPE trainer (`BpeTrainer::do_train`, tokenizers
0.23) with `continuing_subword_prefix="##"`, its vocabulary then read as WordPiece's
(`WordPiece::from_bpe`: the same strings and ids). Here it runs on byte strings, as the
analyzer trains it: every chunk's UTF-8 bytes, each byte one symbol (Hugging Face sees them in
GPT-2's byte-level alphabet, one character a byte, and `#` is itself there, so every string
operation below is the same on bytes), both byte alphabets given first. Read it top to bottom:

1. **The start.** Ids 0..255 are the bytes (`bytes([b])`), ids 256..511 the same bytes inside
   a chunk (`b"##" + bytes([b])`). A chunk is its first byte's id, then 256 + each later byte.
2. **Pair counts.** Every adjacent pair of ids in every chunk, counted by the chunk's count
   (a pair twice in a chunk counts twice); each pair also knows the chunks it occurs in.
3. **The queue.** An entry is (count, pair, chunks); the next is the one with the largest
   count, then the smallest pair (left id, then right id), then the one pushed first (see
   the ties below). Every pair with a positive count starts in it.
4. **A step**, while the vocabulary has fewer than `size` entries: take the next entry. If its
   count is no longer the pair's count, it goes back with the pair's count (pushed again, a
   new entry in push order) and the step ends. If that count is below 1 training ends.
   Otherwise the new token is the left string and the right string, the right's leading `##`
   (if any) removed. If that string is in the vocabulary already, its id is **reused** and
   the vocabulary does not grow (`a`+`##bc` and `ab`+`##c` are both `abc`; `#`+`###` is
   `##`, and `##`+`###` is `###`, the continuing `#`); otherwise it gets the next id.
5. **Merging** in each chunk of the entry (those no longer holding the pair change nothing):
   left to right, non-overlapping, each occurrence of (left, right) becomes the new id; for
   each, the pair with the symbol before (that symbol as it is by then: a new id merged just
   before it in the same pass) loses the chunk's count and the pair (before, new) gains it;
   the pair with the symbol after loses it and (new, after) gains it. The merged pair's own
   count is *not* lowered: it stays as a stale count (a later occurrence of the pair, made by
   a collision, is queued with it). Every pair that gained in a chunk (even if it lost as
   much in it again) notes the chunk; after the step each such pair with a positive count is
   pushed as a *new* entry holding only the chunks noted in this step, even when an older
   entry for it is queued still.
6. **The vocabulary** is every string with its id, 0..n-1 (WordPiece's, prefix `##`).

Ties: entries with the same count and pair are taken in push order here (a stale entry
pushed again is pushed anew). Hugging Face takes them in the order of its heap
(`OctonaryHeap`), which it fills from hash maps seeded at random in each process (ahash): two
such entries exist only when a pair's chunks were queued in two steps, and which goes first
changes the vocabulary only when a step between the two (one that the first one's merging
queued) outranks the second. There Hugging Face differs from itself from run to run, and ours
is one of its outcomes (tests/test_wordpiece.py has a 9-chunk example: two vocabularies, about
half the runs each); everywhere else the order changes nothing and both trainers agree.

Counts: Hugging Face sums pair counts in 32-bit signed integers (`i32`, and a chunk's count
cast to it): a pair occurring more than 2**31 - 1 times in all, counts applied, or a chunk
counted 2**31 times or more, wraps there. Here (and in the engine, in 64 bits) they do not.

>>> train({b"hug": 10, b"pug": 5, b"hugs": 5}, 516)[512:]
[b'##ug', b'hug', b'pug', b'hugs']

(`##u`+`##g` occurs 20 times; then `h`+`##ug`, 15; `p`+`##ug` and `hug`+`##s` both 5, and
`p` is the smaller id.)

`encode` is how a vocabulary cuts a chunk: Hugging Face's `WordPiece` model (its `tokenize`,
BERT's greedy longest match first), as the analyzer counts it. Literally it takes time cubic
in a chunk's length (every end tried from the last, each a new string looked up);
`analyzer.wordpiece.encoder` gives the same ids in time linear in it.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

PREFIX = b"##"
"""WordPiece's mark of a piece inside a chunk (BERT's), as bytes."""
BYTES = 256
ALPHABET = 2 * BYTES
"""Ids of the byte symbols: 0..255 begin a chunk, 256..511 continue one."""


def initial_vocabulary() -> list[bytes]:
    """The 512 byte symbols in id order.

    >>> vocab = initial_vocabulary()
    >>> vocab[97], vocab[256 + 97], len(vocab)
    (b'a', b'##a', 512)
    """
    first = [bytes([byte]) for byte in range(BYTES)]
    return first + [PREFIX + piece for piece in first]


def joined(left: bytes, right: bytes) -> bytes:
    """The token a merge of two makes: the right one's `##`, if it has one, removed.

    >>> joined(b"a", b"##bc"), joined(b"#", b"###"), joined(b"##", b"###"), joined(b"a", b"b")
    (b'abc', b'##', b'###', b'ab')
    """
    return left + (right[len(PREFIX):] if right.startswith(PREFIX) else right)


def merge_word(symbols: list[int], left: int, right: int, new: int) -> list[tuple[int, int, int]]:
    """Merge (left, right) into `new` in one chunk's ids, in place (left to right, not
    overlapping); the changes of pair counts, as (left id, right id, +1 or -1), in the order
    Hugging Face's `Word::merge` makes them.

    >>> ids = [1, 1, 1, 1]
    >>> merge_word(ids, 1, 1, 9), ids
    ([(1, 1, -1), (9, 1, 1), (9, 1, -1), (9, 9, 1)], [9, 9])
    """
    changes = []
    out: list[int] = []
    read = 0
    while read < len(symbols):
        if symbols[read] == left and read + 1 < len(symbols) and symbols[read + 1] == right:
            if out:
                changes.append((out[-1], left, -1))
                changes.append((out[-1], new, 1))
            if read + 2 < len(symbols):
                changes.append((right, symbols[read + 2], -1))
                changes.append((new, symbols[read + 2], 1))
            out.append(new)
            read += 2
        else:
            out.append(symbols[read])
            read += 1
    symbols[:] = out
    return changes


def encode(vocab: Sequence[bytes], chunk: bytes) -> list[int] | None:
    """A chunk's ids under a vocabulary (each id's string, `##` before a piece inside a chunk),
    as Hugging Face's `WordPiece.tokenize` makes them with no limit on a chunk's length: from
    the chunk's start, the longest prefix of what is left that is a string of the vocabulary
    (`##` put before it, past the start), then again from its end. None where some place has
    no such prefix (Hugging Face makes the whole chunk its unknown token there).

    >>> vocab = initial_vocabulary() + [b"##ug", b"hug", b"pug", b"hugs"]
    >>> encode(vocab, b"hugs"), encode(vocab, b"bug"), encode(vocab, b"pugs")
    ([515], [98, 512], [514, 371])
    >>> encode(initial_vocabulary()[:256], b"ab")  # no "##b"
    """
    ids = {piece: token for token, piece in enumerate(vocab)}
    found = []
    start = 0
    while start < len(chunk):
        end = len(chunk)
        while end > start:
            piece = chunk[start:end] if start == 0 else PREFIX + chunk[start:end]
            if piece in ids:
                found.append(ids[piece])
                break
            end -= 1
        if end == start:
            return None
        start = end
    return found


def train(chunk_counts: Mapping[bytes, int], size: int) -> list[bytes]:
    """The vocabulary (each id's string, `##` marking a continuing piece) of at most `size`
    entries, from distinct chunks (bytes) and how often each occurs."""
    vocab = initial_vocabulary()
    ids = {piece: token for token, piece in enumerate(vocab)}
    words = [[chunk[0], *(BYTES + byte for byte in chunk[1:])] for chunk in chunk_counts if chunk]
    counts = [count for chunk, count in chunk_counts.items() if chunk]

    pair_counts: dict[tuple[int, int], int] = {}
    where: dict[tuple[int, int], set[int]] = {}
    for index, word in enumerate(words):
        for pair in zip(word, word[1:]):
            pair_counts[pair] = pair_counts.get(pair, 0) + counts[index]
            where.setdefault(pair, set()).add(index)

    queue: list[tuple[int, int, int, int, set[int]]] = []  # (-count, left, right, push, chunks)
    pushes = 0

    def push(count: int, pair: tuple[int, int], chunks: set[int]) -> None:
        nonlocal pushes
        heapq.heappush(queue, (-count, pair[0], pair[1], pushes, chunks))
        pushes += 1

    def push_noted() -> None:
        for pair, chunks in where.items():
            if pair_counts[pair] > 0:
                push(pair_counts[pair], pair, chunks)
        where.clear()

    push_noted()
    while len(vocab) < size and queue:
        negative, left, right, _, chunks = heapq.heappop(queue)
        count = pair_counts[left, right]
        if -negative != count:
            push(count, (left, right), chunks)  # a stale entry goes back with today's count
            continue
        if count < 1:
            break
        piece = joined(vocab[left], vocab[right])
        new = ids.get(piece)
        if new is None:  # else a collision: the string's id is reused, the vocabulary stays
            new = ids[piece] = len(vocab)
            vocab.append(piece)
        for index in chunks:
            for a, b, change in merge_word(words[index], left, right, new):
                pair_counts[a, b] = pair_counts.get((a, b), 0) + change * counts[index]
                if change > 0:
                    where.setdefault((a, b), set()).add(index)
        push_noted()
    return vocab
