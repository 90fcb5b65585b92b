"""Types of the compiled WordPiece trainer (analyzer/wordpiece/engine/, module.c its Python
face); `analyzer.wordpiece.trainer` runs it, or the reference."""

from array import array
from collections.abc import Mapping

Buffer = bytes | bytearray | memoryview | array[int]

def pack(chunk_counts: Mapping[str, int] | Mapping[bytes, int], /) -> tuple[bytes, bytes, bytes]: ...
def train(data: Buffer, offsets: Buffer, counts: Buffer, size: int, *,
          let_in: int = 4096) -> list[bytes]: ...
