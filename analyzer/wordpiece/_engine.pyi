"""Types of the compiled WordPiece trainer (analyzer/wordpiece/engine/, module.c its Python
face); `analyzer.wordpiece.trainer` runs it, or the reference."""

from array import array

Buffer = bytes | bytearray | memoryview | array[int]

def pack(chunks: list[str] | list[bytes], /) -> tuple[bytes, bytes]: ...
def train(data: Buffer, offsets: Buffer, counts: Buffer, size: int, *,
          let_in: int = 4096) -> list[bytes]: ...
