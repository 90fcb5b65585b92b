"""A WordPiece vocabulary's encoder in time linear in a chunk's length: the ids of
`reference.encode` (Hugging Face's greedy longest match first), on either engine.

Hugging Face's `WordPiece` model tries every end of a chunk from the last and looks each
string up: on one chunk of 10 kB (a line of Chinese under `gpt2`, which cuts no letters) that
is cubic, 19 s. This is Song et al.'s LinMaxMatch (Fast WordPiece Tokenization, EMNLP 2021):
two tries, one of the vocabulary's strings (a chunk's start is looked up there) and one of its
`##` strings without their mark (every later place); in every node, where to go when the next
byte leads nowhere (`fail`: the node of what is left once the longest pieces that the node's
string begins with are taken) and which ids those are (`pops`). Each byte is one step down a
trie; each failure link climbs, so there are never more of them than steps, and each id is
given once: O(n + ids) a chunk, after O(the vocabulary's bytes) to build the tables.

The ids a failure gives are kept as a tree (a node's are those of its parent's failure, then
those of each node its failure passed through), each inner part holding two or more: writing
them out takes time in proportion to the ids written, where lists would take memory
quadratic in a long piece's length.

Both engines give it: `Encoder` here, and the compiled one (`analyzer/wordpiece/engine/
encode.c`, the same steps) that `encoder` gives when it is built.

>>> vocab = [bytes([b]) for b in range(256)] + [b"##" + bytes([b]) for b in range(256)]
>>> encoder(vocab + [b"##ug", b"hug", b"pug", b"hugs"]).encode([b"hugs", "bug", b"pugs"])
[[515], [98, 512], [514, 371]]
"""

from __future__ import annotations

from collections.abc import Sequence

from analyzer.bpe import choice
from analyzer.bpe.packing import as_bytes

from .reference import PREFIX

NONE = -1
"""No node (a failure with nowhere to go: the chunk has no encoding), or no ids."""


class Encoder:
    """The pure-Python encoder of a vocabulary (each id's string); `work` counts its steps
    (bytes read, failure links followed, ids written), for tests of its bound."""

    def __init__(self, vocab: Sequence[bytes]):
        self.work = 0
        self.child: dict[int, int] = {}  # node << 8 | byte -> node
        self.token = [NONE, NONE]        # node 0: the chunk's start; node 1: a later place
        self.start, self.inside = 0, 1
        for token, piece in enumerate(vocab):
            self._insert(self.start, piece, token)
            if piece.startswith(PREFIX) and len(piece) > len(PREFIX):
                self._insert(self.inside, piece[len(PREFIX):], token)
        n = len(self.token)
        self.fail = [NONE] * n
        self.pops = [NONE] * n  # the node whose ids a failure here writes (NONE: no ids)
        self.parts: dict[int, list[int]] = {}  # an inner node of the tree: its parts' nodes
        children: dict[int, list[tuple[int, int]]] = {}
        for key, below in self.child.items():
            children.setdefault(key >> 8, []).append((key & 0xFF, below))
        # Every failure leads to a shallower node of the inside trie: its nodes first, then
        # the start's, each breadth first (a parent before its children).
        for root in (self.inside, self.start):
            level = [root]
            while level:
                deeper = []
                for node in level:
                    for byte, below in children.get(node, []):
                        self._link(node, byte, below)
                        deeper.append(below)
                level = deeper

    def _insert(self, node: int, piece: bytes, token: int) -> None:
        for byte in piece:
            key = node << 8 | byte
            if key not in self.child:
                self.child[key] = len(self.token)
                self.token.append(NONE)
            node = self.child[key]
        self.token[node] = token

    def _link(self, parent: int, byte: int, node: int) -> None:
        """A node's failure link and ids, from its parent's (LinMaxMatch's precomputation)."""
        if self.token[node] != NONE:  # its own id, then a later place
            self.fail[node], self.pops[node] = self.inside, node
            return
        parts = [] if self.pops[parent] == NONE else [self.pops[parent]]
        at = self.fail[parent]
        while at != NONE and (at << 8 | byte) not in self.child:
            if self.pops[at] != NONE:
                parts.append(self.pops[at])
            at = self.fail[at]
        self.fail[node] = NONE if at == NONE else self.child[at << 8 | byte]
        if len(parts) == 1:  # the same ids as that node's: no part of its own
            self.pops[node] = parts[0]
        elif parts:
            self.pops[node] = node
            self.parts[node] = parts

    def _write(self, node: int, out: list[int]) -> None:
        """The ids of `node`'s part of the tree, in order."""
        stack = [node]
        while stack:
            at = stack.pop()
            self.work += 1
            if self.token[at] != NONE:
                out.append(self.token[at])
            else:
                stack.extend(reversed(self.parts[at]))

    def encode(self, chunks: Sequence[str | bytes]) -> list[list[int] | None]:
        """Each chunk's ids (`reference.encode`'s; a str as its UTF-8, surrogate escapes as
        the bytes they stand for), or None where it has none."""
        return [self._encode(as_bytes(chunk)) for chunk in chunks]

    def _encode(self, chunk: bytes) -> list[int] | None:
        if not chunk:
            return []
        out: list[int] = []
        node, child = self.start, self.child
        for byte in chunk:
            while (below := child.get(node << 8 | byte)) is None:
                node = self._fail(node, out)
                if node == NONE:
                    return None
            node = below
            self.work += 1
        while node != self.inside:  # what is left: the longest pieces it begins with
            node = self._fail(node, out)
            if node == NONE:
                return None
        return out

    def _fail(self, node: int, out: list[int]) -> int:
        """A failure at `node`: its ids written, its link (NONE: the chunk has no encoding)."""
        if self.fail[node] != NONE:
            if self.pops[node] != NONE:
                self._write(self.pops[node], out)
            self.work += 1
        return self.fail[node]


def encoder(vocab: Sequence[bytes], engine: str | None = None):
    """The encoder of a vocabulary (each id's string) on the engine asked for ("python",
    "compiled"; None: the compiled one when it is built); its `encode(chunks)` gives each
    chunk's ids."""
    compiled = choice.compiled_module(__package__) if engine != "python" else None
    if engine == "compiled" and compiled is None:
        raise ImportError("the compiled WordPiece engine is not built; reinstall with a C compiler")
    return Encoder(vocab) if compiled is None else compiled.Encoder(list(vocab))
