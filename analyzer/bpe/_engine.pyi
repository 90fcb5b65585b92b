"""Types of the compiled engine (analyzer/bpe/engine/, module.c its Python face);
`analyzer.bpe.compiled` wraps it in the engines' shared contract."""

from array import array
from collections.abc import Callable, Sequence
from typing import NamedTuple

class TrainResult(NamedTuple):
    lefts: bytes
    """int32 per merge: its left id."""
    rights: bytes
    """int32 per merge: its right id."""
    counts: bytes
    """int64 per merge: the pair's count when chosen (in its group, parity-aware)."""
    replaced: bytes
    """int64 per merge: the occurrences it replaced (weights applied)."""
    stop_reason: str
    """"vocab_size", or "min_pair_count" when training stopped early."""
    chosen: bytes | None
    """int32 per merge: the group whose pair it was, -1 for all (None without groups)."""
    replaced_by_group: bytes | None
    """int64, merge-major: each merge's replacements in each group (None without groups)."""
    n_tokens: int
    """Tokens before any merge (weights applied)."""

class CountResult(NamedTuple):
    snapshots: list[bytes]
    """A bytes per snapshot rank: uint32 per text, its tokens just before that merge."""
    replaced: bytes | None
    """int64, merge x group: each merge's replacements in each group (None without groups)."""
    roundtrip: bool | None
    """Whether every text's tokens spell it again (None unless asked)."""
    histograms: bytes | None
    """int64, group x id: each id's occurrences after the replay (None unless asked)."""

def train(buffer: bytes | array, starts: array, weights: array | None, vocab_size: int,
          min_pair_count: int, first: bool, progress: Callable[[int, int], None] | None,
          progress_every: int, groups: array | None = ..., multiplicities: array | None = ...,
          parity: bool = ..., global_merges: int = ..., floor: int = ..., ids: bool = ...,
          first_id: int = ...) -> TrainResult: ...

class Replayer:
    def __init__(self, lefts: bytes, rights: bytes) -> None: ...
    def count_texts(self, texts: list[str], snapshots: array, group_starts: array | None = ...,
                    roundtrip: bool = ..., histograms: bool = ...) -> CountResult: ...
    def encode(self, buffer: bytes) -> bytes: ...
    def decode_bytes(self, ids: Sequence[int]) -> bytes: ...
    def piece(self, token: int) -> bytes: ...

def pack(texts: list[str]) -> tuple[bytes, bytes]: ...
def sum_by_text(counts: bytes, chunk_ids: bytes, offsets: bytes) -> bytes: ...

def split_text(text: str, pattern: int, classes: bytes, folds: bytes) -> list[str] | None: ...
def chunk_texts(texts: list[str] | tuple[str, ...], pattern: int, classes: bytes, folds: bytes,
                weights: array | None = ..., keep_ids: bool = ..., threads: int = ...
                ) -> tuple[list[str], bytes, bytes | None, bytes | None, int]: ...

class ChunkCounter:
    def __init__(self) -> None: ...
    def add(self, chunks: Sequence[str], counts: array | None = ..., first: int = ...) -> None: ...
    def add_items(self, data: bytes, offsets: bytes | array, counts: bytes | array,
                  firsts: bytes | array) -> None: ...
    def merge(self, other: ChunkCounter) -> None: ...
    def items(self) -> tuple[bytes, bytes, bytes, bytes]: ...
    def count_texts(self, texts: list[str] | tuple[str, ...], pattern: int, classes: bytes,
                    folds: bytes, first: int = ..., threads: int = ...) -> int: ...
    def __len__(self) -> int: ...
    @property
    def nbytes(self) -> int: ...

def _counter_from_items(data: bytes, offsets: bytes, counts: bytes, firsts: bytes
                        ) -> ChunkCounter: ...
