"""The counting pass's compiled reading and counting (issue 54): documents found in bytes of
UTF-8 exactly as Python finds them in its strings (`utf8_lines` against `_plain_lines`, invalid
bytes refused alike, `str.isspace` on every code point), the reader giving the same documents,
batches, skips and messages with it as without, and a `PartedCounter` that threads count into
at once equal to a literal count (collections.Counter over `regex`'s chunks of the documents,
in order of first occurrence) for any number of parts and threads."""

from __future__ import annotations

import collections
import threading
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.bpe import choice
from analyzer.bpe.counting import ChunkTable, count_texts, count_utf8, parted_counter, resolve
from analyzer.bpe.pretokenize import PRETOKENIZERS
from analyzer.corpus.streams import StreamError, _plain_lines, read_documents

engine = choice.extension()
pytestmark = pytest.mark.skipif(engine is None, reason="the compiled engine is not built")

PIECES = ["a", "b", "ab", " ", "  ", "\t", "\r", "é", "€", "中", "😀", "1", "23", "'s", ".",
          "\u00a0", "\u2003", "\u3000", "\x1c", "\u0085", "ǅ", "İ"]
"""Small alphabets, multi-byte text and Unicode whitespace (what `isspace` and the splitters
care about)."""
INVALID = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xe2\x82",
           b"\x80", b"\xf0\x9f\x98"]
"""Bytes Python's strict decoder refuses: stray, cut short, a surrogate, overlong, too high."""

TEXT = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)
BLOCK = st.lists(st.one_of(st.sampled_from(PIECES).map(str.encode), st.just(b"\n"),
                           st.sampled_from(INVALID)), max_size=40).map(b"".join)


def lines_of(block: bytes) -> list[str] | None:
    found = engine.utf8_lines(block)
    if found is None:
        return None
    starts, ends, characters = found
    starts, ends = np.frombuffer(starts, np.int64), np.frombuffer(ends, np.int64)
    texts = [block[s:e].decode() for s, e in zip(starts, ends)]
    assert characters == sum(map(len, texts))
    return texts


@settings(max_examples=400, deadline=None)
@given(BLOCK)
def test_utf8_lines_finds_what_plain_lines_finds_and_refuses_what_it_refuses(block):
    whole = block[:block.rfind(b"\n") + 1]  # blocks of whole lines, as the reader gives them
    assert lines_of(whole) == _plain_lines(whole)


def test_utf8_lines_sees_whitespace_as_str_isspace_on_every_code_point():
    points = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000 and c != 0x0A]
    block = "".join(chr(c) + "\n" for c in points).encode()
    assert lines_of(block) == [chr(c) for c in points if not chr(c).isspace()]


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(lines))
    return path


LINES = st.lists(st.one_of(TEXT.map(lambda text: text.encode() + b"\n"),
                           st.sampled_from(INVALID).map(lambda bad: b"x" + bad + b"\n")),
                 min_size=1, max_size=30)


@settings(max_examples=150, deadline=None)
@given(LINES, st.booleans(), st.sampled_from([16, 64, 1 << 20]), st.booleans())
def test_the_reader_gives_the_same_documents_batches_and_skips_as_bytes(
        tmp_path_factory, lines, skip_invalid, batch_bytes, last_unended):
    """With `utf8_lines`, the same documents in the same batches (first place, skips, notes),
    and the same error naming the file, line and byte for a line that is not UTF-8."""
    if last_unended:
        lines[-1] = lines[-1].rstrip(b"\n")
    path = write_lines(tmp_path_factory.mktemp("lines") / "eng_Latn.txt", lines)

    def read(utf8_lines):
        try:
            return [(batch.decoded(), batch.first, batch.skipped_documents, batch.skipped_bytes,
                     batch.notes, batch.n_bytes)
                    for batch in read_documents(path, skip_invalid=skip_invalid,
                                                batch_bytes=batch_bytes, utf8_lines=utf8_lines)]
        except StreamError as error:
            return str(error)

    assert read(engine.utf8_lines) == read(None)


def reference(batches: list[list[str]], pattern: str) -> tuple[list[str], list[int]]:
    """The chunks of every document in order, counted literally, in order of first
    occurrence."""
    counted = collections.Counter(chunk for batch in batches for text in batch
                                  for chunk in regex.findall(pattern, text))
    return list(counted), list(counted.values())  # a Counter keeps the order chunks came in


BATCHES = st.lists(st.lists(TEXT.filter(str.strip), max_size=6), min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(BATCHES, st.sampled_from(["o200k", "cl100k", "words", "gpt2", "llama3"]),
       st.integers(1, 5), st.integers(1, 4), st.booleans())
def test_a_parted_counter_counted_by_threads_at_once_is_the_literal_count(
        batches, name, parts, threads, as_bytes):
    """Batches counted by `threads` threads at once, in any order, as bytes or as str: the
    chunks in order of first occurrence, each counted once in one part, the counts the literal
    ones; listed a slice at a time, the same table."""
    splitter = resolve(name)
    counter = parted_counter(parts)
    todo = list(enumerate(batches))[::-1]  # the last batches first: order keys put them back
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if not todo:
                    return
                number, texts = todo.pop()
            first = number << 24
            if as_bytes:
                data = "".join(texts).encode()
                ends = np.cumsum([len(text.encode()) for text in texts], dtype=np.int64)
                starts = ends - np.array([len(text.encode()) for text in texts], np.int64)
                assert count_utf8(counter, data, starts, ends, splitter, first)
            else:
                count_texts(counter, texts, splitter, first, threads=1)

    running = [threading.Thread(target=work) for _ in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    chunks, counts = reference(batches, PRETOKENIZERS[name])
    table = ChunkTable.of(counter)
    assert (table.chunks(), list(table.counts)) == (chunks, counts)
    assert len(counter) == len(chunks)
    firsts = list(table.firsts)
    assert firsts == sorted(firsts)
    sliced = []
    while True:
        data, offsets, counts_blob, _ = counter.items(3)
        if not counts_blob:
            break
        offsets = np.frombuffer(offsets, np.int64)
        sliced += [data[s - offsets[0]:e - offsets[0]].decode()
                   for s, e in zip(offsets[:-1], offsets[1:])]
    assert sliced == chunks
    with pytest.raises(RuntimeError, match="counts no more"):
        counter.add(["a"])


def test_count_utf8_refuses_bytes_that_are_not_utf8_or_not_within_the_data():
    counter = parted_counter(2)
    splitter = resolve("o200k")
    with pytest.raises(ValueError, match="not UTF-8"):
        count_utf8(counter, b"a\xff", np.array([0]), np.array([2]), splitter)
    with pytest.raises(ValueError, match="not within the data"):
        count_utf8(counter, b"ab", np.array([0]), np.array([3]), splitter)
    assert len(counter) == 0
