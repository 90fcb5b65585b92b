"""Types of the compiled WordPiece trainer and encoder (analyzer/wordpiece/engine/, module.c
its Python face); `analyzer.wordpiece.trainer` runs it, or the reference."""

from array import array

Buffer = bytes | bytearray | memoryview | array[int]

def pack(chunks: list[str] | list[bytes], /) -> tuple[bytes, bytes]: ...
def train(data: Buffer, offsets: Buffer, counts: Buffer, size: int, *,
          let_in: int = 4096, work: Buffer = ...) -> list[bytes]: ...

class Encoder:
    """A vocabulary's encoder (encode.c): Hugging Face's greedy longest match, linear time."""
    work: int
    def __init__(self, vocab: list[bytes]) -> None: ...
    def encode(self, chunks: list[str] | list[bytes] | list[str | bytes], /
               ) -> list[list[int] | None]: ...
