"""Documents read from a file as a stream: plain text (a line, or a blank-line block, is a
document), JSON Lines (a text field) or Parquet (a text column), each also gzip-, zstd- or
xz-compressed, told apart by content (a file's name is checked against it, never trusted
alone). Never a whole file in memory: documents come in batches of about `BATCH_BYTES`.

What a document is, is decided here once: training sources are registered (counted) and
sampled (read again) through the same reader, so both see the same documents, in the same
order. A blank line, or a document with no text, is no document.

    for batch in read_documents(Path("fra_Latn.jsonl.zst")):
        batch.texts, batch.first        # the documents, and the place of the first in the file

Bad input is a `StreamError` naming the file and where (the byte offset in the decompressed
text, the line, or the Parquet row); with `skip_invalid`, the bad document (or, for a broken
compressed stream, the rest of the file) is skipped and counted instead.
"""

from __future__ import annotations

import codecs
import contextlib
import lzma
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, cast

import numpy as np

from .errors import CorpusError
from .files import COMPRESSIONS, NotJSON, lone_surrogate, parse_json

BATCH_BYTES = 8 << 20
"""About how much text a batch holds."""
READ_BYTES = 1 << 20
"""How much is read from a file at a time."""
REST_SKIPPED = "the rest of the file was skipped"
"""How the note of a broken compressed stream ends (what `--skip-invalid` did with it)."""

SUFFIXES = {".gz": "gzip", ".gzip": "gzip", ".zst": "zstd", ".zstd": "zstd", ".xz": "xz"}
PARQUET_MAGIC = b"PAR1"
FORMATS = ("text", "jsonl", "parquet")
FORMAT_SUFFIXES = {".txt": "text", ".text": "text", ".jsonl": "jsonl", ".ndjson": "jsonl",
                   ".json": "jsonl", ".parquet": "parquet"}
DOCUMENT_KINDS = ("lines", "paragraphs")
DEFAULT_TEXT_FIELD = "text"


class StreamError(CorpusError):
    """A file of a training source that cannot be read as documents; the message names the file
    and where."""


@dataclass
class Batch:
    """Documents read in a row from one file."""

    texts: list[str]
    first: int
    """The place of the first document in its file (0-based)."""
    skipped_documents: int = 0
    skipped_bytes: int = 0
    """What was skipped while reading this batch (with `skip_invalid`)."""
    notes: list[str] = field(default_factory=list)
    """What was skipped, in words (for the run to report)."""
    utf8: Utf8Documents | None = None
    """Its documents as UTF-8 bytes, in place of `texts` (read with `utf8_lines`)."""

    @property
    def documents(self) -> int:
        return len(self.utf8) if self.utf8 is not None else len(self.texts)

    @property
    def n_bytes(self) -> int:
        """The UTF-8 bytes of its documents."""
        return self.utf8.n_bytes if self.utf8 is not None else utf8_bytes(self.texts)

    def decoded(self) -> list[str]:
        """Its documents as text (made from `utf8` when it has it)."""
        return self.utf8.texts() if self.utf8 is not None else self.texts


@dataclass
class Utf8Documents:
    """Documents as UTF-8 bytes, the k-th `data[starts[k]:ends[k]]`: what the compiled counter
    reads, with no Python string per document.

    >>> documents = Utf8Documents(b"ab\\ncd", np.array([0, 3]), np.array([2, 5]))
    >>> len(documents), documents.n_bytes, documents.texts()
    (2, 4, ['ab', 'cd'])
    """

    data: bytes
    starts: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def n_bytes(self) -> int:
        return int((self.ends - self.starts).sum())

    def texts(self) -> list[str]:
        data = self.data
        return [data[start:end].decode("utf-8") for start, end in zip(self.starts.tolist(),
                                                                      self.ends.tolist())]

    def taken(self, chosen: np.ndarray) -> Utf8Documents:
        """The documents where `chosen` is true."""
        return Utf8Documents(self.data, self.starts[chosen], self.ends[chosen])


class _Utf8Batch:
    """A batch's documents gathered as UTF-8 in file order: whole blocks of lines as they were
    read, and a document decoded on its own (a block with a line that is not UTF-8, read line
    by line) encoded again."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.starts: list[np.ndarray] = []
        self.ends: list[np.ndarray] = []
        self.used = 0

    def add_block(self, block: bytes, starts: bytes, ends: bytes) -> None:
        self.pieces.append(block)
        self.starts.append(np.frombuffer(starts, np.int64) + self.used)
        self.ends.append(np.frombuffer(ends, np.int64) + self.used)
        self.used += len(block)

    def add_text(self, text: str) -> None:
        data = text.encode("utf-8")
        self.pieces.append(data)
        self.starts.append(np.array([self.used], np.int64))
        self.ends.append(np.array([self.used + len(data)], np.int64))
        self.used += len(data)

    def documents(self) -> Utf8Documents:
        empty = np.zeros(0, np.int64)
        return Utf8Documents(b"".join(self.pieces), np.concatenate([empty, *self.starts]),
                             np.concatenate([empty, *self.ends]))


def utf8_bytes(texts: list[str]) -> int:
    """The UTF-8 bytes of the texts, all at once (a lone surrogate, which only a caller's
    own str can hold, counts as UTF-8's three bytes for it).

    >>> utf8_bytes(["ab", "é"])
    4
    """
    joined = "".join(texts)
    return len(joined) if joined.isascii() else len(joined.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class FileKind:
    """How a file is read: its compression (None: plain) and its format."""

    compression: str | None
    format: str


def compression_of(path: Path, head: bytes) -> str | None:
    """The file's compression, from its first bytes; StreamError when its name says another.

    >>> compression_of(Path("a.txt.gz"), b"\\x1f\\x8b\\x08"), compression_of(Path("a.txt"), b"abc")
    ('gzip', None)
    """
    found = next((name for name, magic in COMPRESSIONS.items() if head.startswith(magic)), None)
    named = SUFFIXES.get(path.suffix.lower())
    if named is not None and found != named:
        raise StreamError(f"{path}: named as {named}-compressed, but its bytes are "
                          f"{'of ' + found if found else 'not compressed'} (they begin with "
                          f"{head[:6]!r})", file=str(path))
    return found


def _open(path: Path, compression: str | None) -> BinaryIO:
    """The file's decompressed bytes, as a stream (closing it closes the file)."""
    if compression is None:
        return path.open("rb")
    return cast(BinaryIO, Decompressed(path.open("rb"), compression))


class BrokenStream(OSError):
    """A compressed stream that cannot be read on: damaged, cut short, or followed by bytes that
    are not another stream. Raised only after every byte decompressed before it was read."""


def _decoder(compression: str):
    """A new decompressor of one stream (`decompress`, `eof`, `unused_data`)."""
    if compression == "gzip":
        return zlib.decompressobj(wbits=31)
    if compression == "xz":
        return lzma.LZMADecompressor()
    import zstandard

    return zstandard.ZstdDecompressor().decompressobj()


class Decompressed:
    """gzip, xz or zstd, read alike: streams one after another (as `cat a.gz b.gz` makes), and
    any fault (a damaged block, a stream cut short, trailing bytes that are no stream) raised
    as `BrokenStream` only once all that came before it was read. The libraries' own readers
    lost what they had decompressed in the read that failed (up to a block of good text), and
    zstd's ended a cut frame without a word.

    >>> import gzip, io
    >>> whole = gzip.compress(b"one\\n") + gzip.compress(b"two\\n")
    >>> Decompressed(io.BytesIO(whole), "gzip").read(100)
    b'one\\ntwo\\n'
    >>> cut = Decompressed(io.BytesIO(whole[:-30]), "gzip")
    >>> cut.read(100), cut.read(100)
    Traceback (most recent call last):
    ...
    analyzer.corpus.streams.BrokenStream: the stream ends before its end (cut short)
    """

    RAW_BYTES = {"gzip": 1 << 16, "xz": 1 << 14, "zstd": 1 << 12}
    """Compressed bytes fed at a time, so that what one feed can give stays bounded (gzip gives
    at most about 1,000 times its input; a zstd block of a few bytes can give 128 KB)."""

    def __init__(self, raw: BinaryIO, compression: str):
        self.raw, self.compression = raw, compression
        self.magic = COMPRESSIONS[compression]
        self.decoder = _decoder(compression)
        self.started = False  # the current stream has had input
        self.buffer = bytearray()
        self.fault: BrokenStream | None = None
        self.done = False

    def read(self, size: int = -1) -> bytes:
        while (size < 0 or len(self.buffer) < size) and not self.done and self.fault is None:
            self._fill()
        if not self.buffer and self.fault is not None:
            fault, self.fault = self.fault, None
            self.done = True
            raise fault
        size = len(self.buffer) if size < 0 else min(size, len(self.buffer))
        out = bytes(self.buffer[:size])
        del self.buffer[:size]
        return out

    def _fill(self) -> None:
        chunk = self.raw.read(self.RAW_BYTES[self.compression])
        if not chunk:
            if self.started and not self.decoder.eof:
                self.fault = BrokenStream("the stream ends before its end (cut short)")
            self.done = True
            return
        self._feed(chunk)

    def _feed(self, chunk: bytes) -> None:
        while chunk:
            self.started = True
            try:
                self.buffer += self.decoder.decompress(chunk)
            except Exception as error:  # zlib.error, LZMAError, ZstdError: the data is damaged
                self.fault = BrokenStream(f"damaged data ({error})")
                return
            if not self.decoder.eof:
                return
            rest = self.decoder.unused_data
            if self.compression == "xz":
                rest = rest.lstrip(b"\0")  # xz's stream padding
            if rest and not rest.startswith(self.magic[:len(rest)]):
                self.fault = BrokenStream("bytes after its end that are not another stream")
                return
            self.decoder, self.started, chunk = _decoder(self.compression), False, rest

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> Decompressed:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def file_kind(path: Path, format: str | None = None) -> FileKind:
    """How to read `path`: its compression from its content, its format as given, else from its
    content (Parquet's magic bytes, a JSON object on the first line) and its name."""
    try:
        with path.open("rb") as file:
            head = file.read(8)
    except OSError as error:
        raise StreamError(f"{path}: cannot read ({error.strerror})", file=str(path)) from None
    compression = compression_of(path, head)
    if format is not None:
        if format not in FORMATS:
            raise StreamError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
        return FileKind(compression, format)
    name = path.name.lower()
    for suffix in SUFFIXES:
        name = name.removesuffix(suffix)
    named = FORMAT_SUFFIXES.get(Path(name).suffix)
    with _open(path, compression) as stream:
        try:
            start = stream.read(4096)
        except (OSError, EOFError, lzma.LZMAError, zlib.error) as error:
            raise StreamError(f"{path}: its {compression} stream is broken ({error})",
                              file=str(path)) from None
    if start.startswith(PARQUET_MAGIC):
        return FileKind(compression, "parquet")
    if named == "parquet":
        raise StreamError(f"{path}: named as Parquet, but it does not begin as Parquet does "
                          "(PAR1)", file=str(path))
    if named is not None:
        return FileKind(compression, named)
    return FileKind(compression, "jsonl" if start.lstrip()[:1] == b"{" else "text")


Utf8Lines = Callable[[bytes], "tuple[bytes, bytes, int] | None"]
"""What finds the documents of a block of whole lines of plain text as UTF-8 bytes, the
compiled engine's `utf8_lines`: `(starts, ends, characters)`, int64 byte offsets of each
document and their code points in all, as `_plain_lines` would make them; None when the
block is not UTF-8."""


def read_documents(path: Path, kind: FileKind | None = None, *, documents: str = "lines",
                   text_field: str = DEFAULT_TEXT_FIELD, skip_invalid: bool = False,
                   batch_bytes: int = BATCH_BYTES, utf8_lines: Utf8Lines | None = None
                   ) -> Iterator[Batch]:
    """The file's documents in batches, in file order. With `utf8_lines`, plain text's lines
    come as UTF-8 bytes (`Batch.utf8`), the same documents in the same batches."""
    kind = kind or file_kind(path)
    if documents not in DOCUMENT_KINDS:
        raise StreamError(f"documents are lines or paragraphs, not {documents!r}")
    if kind.format == "parquet":
        yield from _parquet(path, kind, text_field, skip_invalid, batch_bytes)
    else:
        as_utf8 = utf8_lines if kind.format == "text" and documents == "lines" else None
        yield from _lines(path, kind, documents, text_field, skip_invalid, batch_bytes, as_utf8)


def _lines(path: Path, kind: FileKind, documents: str, text_field: str, skip_invalid: bool,
           batch_bytes: int, utf8_lines: Utf8Lines | None = None) -> Iterator[Batch]:
    """Text and JSON Lines: read in blocks, cut after the last line break of each block, each
    block's complete lines decoded and made documents (or, with `utf8_lines`, found in the
    block's bytes: a block that is not all UTF-8 is decoded line by line, as without)."""
    place = 0  # documents so far
    offset = 0  # decompressed bytes before the block being read
    line_number = 0  # lines before it
    carry = b""  # the start of a line the block before did not finish
    long_line: list[bytes] = []  # the blocks after it, while no line break comes
    pending: list[str] = []  # a paragraph's lines so far
    batch = Batch([], 0)
    size = 0  # characters of the batch's documents
    gathered = _Utf8Batch() if utf8_lines is not None else None

    def keep(text: str) -> None:
        if gathered is not None:
            gathered.add_text(text)
        else:
            batch.texts.append(text)

    def sealed() -> Batch:
        nonlocal gathered
        if gathered is not None:
            batch.utf8 = gathered.documents()
            gathered = _Utf8Batch()
        return batch
    try:
        stream = _open(path, kind.compression)
    except OSError as error:
        raise StreamError(f"{path}: cannot read ({error.strerror})", file=str(path)) from None
    with stream:
        while True:
            try:
                block = stream.read(READ_BYTES)
            except (OSError, EOFError, lzma.LZMAError, zlib.error) as error:
                carry += b"".join(long_line)
                long_line.clear()
                where = f"after {offset + len(carry):,} bytes of its text"
                if not skip_invalid:
                    raise StreamError(f"{path}: its {kind.compression} stream is broken {where} "
                                      f"({error}); nothing of it was used (--skip-invalid "
                                      "uses what came before)", file=str(path)) from None
                batch.notes.append(f"{path}: its {kind.compression} stream is broken {where}; "
                                   f"{REST_SKIPPED}")
                batch.skipped_bytes += len(carry)
                carry = b""
                break
            if not block:
                break
            cut = block.rfind(b"\n") + 1
            if not cut:  # no line break yet: read on (a long line), its blocks kept apart
                long_line += [carry, block] if carry else [block]
                carry = b""
                continue
            if long_line:  # joined once, not copied block after block (that was quadratic)
                complete = b"".join([*long_line, block[:cut]])
                long_line.clear()
            else:
                complete = carry + block[:cut]
            carry = block[cut:]
            if gathered is not None and utf8_lines is not None:
                found = utf8_lines(complete)
                if found is not None:  # all of it UTF-8: the documents at once, as bytes
                    starts, ends, characters = found
                    line_number += complete.count(b"\n")
                    offset += len(complete)
                    gathered.add_block(complete, starts, ends)
                    size += characters
                    place += len(starts) // 8
                    if size >= batch_bytes:
                        yield sealed()
                        batch, size = Batch([], place), 0
                    continue
            elif kind.format == "text" and documents == "lines":
                found_texts = _plain_lines(complete)
                if found_texts is not None:  # all of it UTF-8: the documents at once
                    line_number += complete.count(b"\n")
                    offset += len(complete)
                    batch.texts += found_texts
                    size += sum(map(len, found_texts))
                    place += len(found_texts)
                    if size >= batch_bytes:
                        yield batch
                        batch, size = Batch([], place), 0
                    continue
            for raw in complete.split(b"\n")[:-1]:
                line_number += 1
                text = _decode(raw, path, offset, line_number, batch, skip_invalid)
                offset += len(raw) + 1
                if text is None:
                    continue
                made = _document(text, kind.format, documents, text_field, path, line_number,
                                 batch, skip_invalid, pending)
                if made is None:
                    continue
                keep(made)
                size += len(made)
                place += 1
                if size >= batch_bytes:
                    yield sealed()
                    batch, size = Batch([], place), 0
    if long_line:
        carry += b"".join(long_line)
    if carry:  # a last line with no line break
        line_number += 1
        text = _decode(carry, path, offset, line_number, batch, skip_invalid)
        if text is not None:
            made = _document(text, kind.format, documents, text_field, path, line_number, batch,
                             skip_invalid, pending)
            if made is not None:
                keep(made)
                place += 1
    if documents == "paragraphs" and kind.format == "text" and pending:
        batch.texts.append("\n".join(pending))
        place += 1
    sealed()
    if batch.documents or batch.skipped_documents or batch.skipped_bytes or batch.notes:
        yield batch


_UTF8 = codecs.getdecoder("utf-8")


def _plain_lines(complete: bytes) -> list[str] | None:
    """The documents of whole lines of plain text (a document a line, blank lines none); None
    when some line is not UTF-8 (then each line is read alone, to say which)."""
    try:
        text = _UTF8(complete)[0]
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")[:-1]
    if "\r" in text:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    return [line for line in lines if line and not line.isspace()]


def _decode(raw: bytes, path: Path, offset: int, line: int, batch: Batch,
            skip_invalid: bool) -> str | None:
    """A line's text (a carriage return before its break dropped); None when it is not UTF-8
    and `skip_invalid` (it is counted), else StreamError naming the byte."""
    try:
        text = _UTF8(raw)[0]
    except UnicodeDecodeError as error:
        where = offset + error.start
        if not skip_invalid:
            raise StreamError(f"{path}: not valid UTF-8 at byte offset {where:,} of its text "
                              f"(line {line:,}, byte 0x{raw[error.start]:02x}); training text is "
                              "UTF-8 (--skip-invalid skips such lines)", file=str(path),
                              line=line) from None
        batch.skipped_documents += 1
        batch.skipped_bytes += len(raw)
        return None
    return text[:-1] if text.endswith("\r") else text


def _document(text: str, format: str, documents: str, text_field: str, path: Path, line: int,
              batch: Batch, skip_invalid: bool, pending: list[str]) -> str | None:
    """The document a line makes (None: none yet, or none at all)."""
    if format == "jsonl":
        if not text.strip():
            return None
        try:
            value = parse_json(text)
            found = value[text_field] if isinstance(value, dict) else None
        except NotJSON as error:
            problem = f"is {error}" if str(error).startswith("not ") else f"holds {error}"
        except KeyError:
            problem = f"has no {text_field!r} field (--text-field names another)"
        else:
            if isinstance(found, str) and lone_surrogate(found) is None:
                return found if found and not found.isspace() else None
            problem = (f"has a {text_field!r} that is not a string" if not isinstance(found, str)
                       else f"has a {text_field!r} with a lone surrogate escape (e.g. \\ud800), "
                       "which is not text") if isinstance(value, dict) else "is not a JSON object"
        if not skip_invalid:
            raise StreamError(f"{path}: line {line:,} {problem}", file=str(path), line=line)
        batch.skipped_documents += 1
        batch.skipped_bytes += len(text.encode("utf-8", errors="surrogatepass"))
        return None
    if documents == "lines":
        return text if text.strip() else None
    if text.strip():  # a paragraph's line
        pending.append(text)
        return None
    if not pending:
        return None
    paragraph = "\n".join(pending)
    pending.clear()
    return paragraph


class ParquetColumns:
    """A Parquet file read a column set at a time: its columns' kinds, and its rows in record
    batches. Errors are StreamErrors naming the file as given (`shown`) and the row."""

    def __init__(self, real: Path, shown: Path):
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.path = shown
        try:
            self._file = pq.ParquetFile(real)
        except (OSError, pa.ArrowException) as error:
            raise StreamError(f"{shown}: not a readable Parquet file ({error})",
                              file=str(shown)) from None
        schema = self._file.schema_arrow
        repeated = sorted({name for name in schema.names if schema.names.count(name) > 1})
        if repeated:
            raise StreamError(f"{shown}: column {repeated[0]!r} appears more than once; a "
                              "column must name one thing", file=str(shown))
        self.kinds = {name: _kind_of(schema.field(name).type) for name in schema.names}
        """`{column: "text" | "integer" | its Arrow type}`, in the file's order."""
        self.rows = self._file.metadata.num_rows

    def batches(self, columns: list[str], rows: int) -> Iterator[tuple[int, dict[str, list]]]:
        """`(rows before it, {column: its values})` of each record batch of about `rows`
        rows, in file order; StreamError for a missing column or a damaged file."""
        import pyarrow as pa

        missing = [name for name in columns if name not in self.kinds]
        if missing:
            raise StreamError(f"{self.path}: no column {missing[0]!r} (it has: "
                              f"{', '.join(self.kinds)})", file=str(self.path))
        done = 0
        try:
            for record_batch in self._file.iter_batches(batch_size=max(1, rows), columns=columns):
                values = {name: record_batch.column(i).to_pylist()
                          for i, name in enumerate(columns)}
                yield done, values
                done += record_batch.num_rows
        except (OSError, pa.ArrowException) as error:
            raise StreamError(f"{self.path}: the Parquet file is damaged after row {done:,} "
                              f"({error})", file=str(self.path)) from None


def _kind_of(arrow_type) -> str:
    import pyarrow as pa

    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "text"
    if pa.types.is_integer(arrow_type):
        return "integer"
    return str(arrow_type)


@contextlib.contextmanager
def parquet_columns(path: Path, kind: FileKind | None = None) -> Iterator[ParquetColumns]:
    """A Parquet file, compressed or not, to read by columns (a compressed one is decompressed
    into a temporary file first: Parquet is read by seeking)."""
    kind = kind or file_kind(path)
    if kind.compression is None:
        yield ParquetColumns(path, path)
        return
    with tempfile.NamedTemporaryFile(suffix=".parquet") as plain:
        try:
            with _open(path, kind.compression) as stream:
                shutil.copyfileobj(stream, plain)
        except (OSError, EOFError, lzma.LZMAError, zlib.error) as error:
            raise StreamError(f"{path}: its {kind.compression} stream is broken ({error})",
                              file=str(path)) from None
        plain.flush()
        yield ParquetColumns(Path(plain.name), path)


def _parquet(path: Path, kind: FileKind, text_field: str, skip_invalid: bool,
             batch_bytes: int) -> Iterator[Batch]:
    """A Parquet file's text column, a record batch at a time."""
    place = 0
    with parquet_columns(path, kind) as table:
        if table.kinds.get(text_field, "text") != "text":
            raise StreamError(f"{path}: column {text_field!r} holds {table.kinds[text_field]}, "
                              "not text", file=str(path))
        if text_field not in table.kinds:
            raise StreamError(f"{path}: no column {text_field!r} (it has: "
                              f"{', '.join(table.kinds)}); --text-field names another",
                              file=str(path))
        for before, values in table.batches([text_field], max(1, batch_bytes // 2048)):
            batch = Batch([], place)
            for row, value in enumerate(values[text_field], start=before + 1):
                if value is None:
                    if not skip_invalid:
                        raise StreamError(f"{path}: row {row:,} has no {text_field!r} (null)",
                                          file=str(path), line=row)
                    batch.skipped_documents += 1
                    continue
                if value and not value.isspace():
                    batch.texts.append(value)
                    place += 1
            yield batch
