"""Unigram and WordPiece vocabularies: trained, then counted as Hugging Face `tokenizers` counts
them.

Both are trained by the analyzer's own engines: Unigram by `analyzer.unigram` (SentencePiece's
algorithm, exact and on every core), WordPiece by `analyzer.wordpiece` (Hugging Face's
`WordPieceTrainer`, token for token, in a fraction of its time). Both are stored as a whole
tokenizer.json; Unigram is counted by Hugging Face `tokenizers` from that file, WordPiece by
`analyzer.wordpiece.encoder` from its vocabulary (the library's ids, tested equal, in time
linear in a chunk's length where the library's search is cubic). Both run on the
same byte-level alphabet as the analyzer's BPE, so their premiums compare like with like:

- every chunk is written in GPT-2's byte-level alphabet (each UTF-8 byte one character, as
  Hugging Face's `ByteLevel` writes it), and all 256 byte symbols are in every vocabulary, so
  every text round-trips; there are no special tokens and no unknown token is ever produced;
- the run's own pre-tokenizer cuts the texts (the same chunks reach every trainer), and each
  distinct chunk goes to the trainer with how often it occurs.

How a size is counted, so that "size 4096" is 4096 entries for every algorithm:

- BPE: the 256 bytes and 3,840 merges;
- Unigram: the 256 byte symbols and 3,840 pieces (fewer where the text has no more);
- WordPiece: the 256 byte symbols that begin a chunk, the 256 that continue one (`##` and the
  byte) and 3,584 pieces learned. WordPiece's pieces inside a chunk carry `##`, so it needs
  both alphabets to be lossless: both are given to the trainer before it learns anything.

Neither is prefix-consistent: each size is its own training. Both trainings are deterministic:
Unigram's pieces, scores and ids are the same on any number of threads (its engine sums in
integers); WordPiece's vocabulary is the one Hugging Face's trainer makes with both byte
alphabets given first (`huggingface_wordpiece`, kept to check it), where that trainer is
deterministic itself (`analyzer.wordpiece.reference` says where it is not). Runs before the
analyzer had its own engines stored models Hugging Face's `UnigramTrainer` and
`WordPieceTrainer` made; they are read and counted as stored.

    model = train_model(Algorithm.UNIGRAM, chunked_counts, 1024, "cl100k")
    model.encode("Hello world")       # ids, the library's own encoding of each chunk
    model.document                    # the tokenizer.json the run stores, byte for byte
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from analyzer import unigram, wordpiece
from analyzer.bpe.counting import ChunkTable
from analyzer.bpe.pretokenize import NONE, Pretokenizer, resolve
from analyzer.identity import Algorithm
from analyzer.unigram.trainer import Progress as UnigramProgress

from . import formats
from .errors import TokenizerError
from .formats import byte_level_alphabet

BYTE_CHARS = byte_level_alphabet()
"""Each byte as the character that stands for it (GPT-2's byte-level alphabet)."""
CHAR_BYTES = {char: byte for byte, char in BYTE_CHARS.items()}
CONTINUING = "##"
"""WordPiece's mark of a piece inside a chunk (BERT's)."""
UNLIMITED = 2**31 - 1
"""WordPiece's longest chunk: the library makes a longer one a single unknown token (lossy)."""
SEQUENCE_BATCH = 4096
"""Chunks handed to the trainer per batch."""


def min_size(algorithm: Algorithm) -> int:
    """The smallest size an algorithm has: its byte symbols.

    >>> min_size(Algorithm.UNIGRAM), min_size(Algorithm.WORDPIECE)
    (256, 512)
    """
    return 512 if algorithm == Algorithm.WORDPIECE else 256


def to_byte_chars(chunk: str) -> str:
    """A chunk's UTF-8 bytes in the byte-level alphabet.

    >>> to_byte_chars("é ")
    'Ã©Ġ'
    """
    return "".join([BYTE_CHARS[byte] for byte in chunk.encode("utf-8", errors="surrogateescape")])


def spell(piece: bytes) -> str:
    """A piece's bytes in the byte-level alphabet.

    >>> spell(b"##\\xc3\\xa9")
    '##Ã©'
    """
    return "".join([BYTE_CHARS[byte] for byte in piece])


def sha256(document: bytes) -> str:
    return hashlib.sha256(document).hexdigest()


def library():
    try:
        import tokenizers
    except ImportError:
        raise TokenizerError("Unigram and WordPiece are counted by Hugging Face tokenizers: "
                             f"{formats.EXTRA}") from None
    return tokenizers


@dataclass
class LibraryModel:
    """A trained Unigram or WordPiece model: its tokenizer.json (`document`, what the run
    stores) and the library's tokenizer built from it, which encodes chunk by chunk after the
    run's pre-tokenizer."""

    algorithm: Algorithm
    document: bytes
    pretokenizer: str
    tokenizer: object = field(repr=False)
    splitter: Pretokenizer | None = field(repr=False)
    pieces_of: list[str] = field(repr=False)
    """Each id's piece, as the vocabulary writes it (byte symbols, `##` inside a chunk)."""
    _chunk_ids: dict[str, list[int]] = field(default_factory=dict, repr=False)

    @property
    def size(self) -> int:
        """Entries in the vocabulary (byte symbols included)."""
        return len(self.pieces_of)

    @property
    def sha256(self) -> str:
        return sha256(self.document)

    @cached_property
    def _spelled(self) -> tuple[list[bytes], list[bytes]]:
        """Each id's bytes as a chunk's first token, and inside a chunk (a WordPiece `##`
        piece's without its mark: the bytes it adds there)."""
        whole = [bytes([CHAR_BYTES[char] for char in piece]) for piece in self.pieces_of]
        if self.algorithm != Algorithm.WORDPIECE:
            return whole, whole
        inner = [bytes([CHAR_BYTES[char] for char in piece[len(CONTINUING):]])
                 if piece.startswith(CONTINUING) and len(piece) > len(CONTINUING) else spelled
                 for piece, spelled in zip(self.pieces_of, whole)]
        return whole, inner

    def token_bytes(self, token: int) -> bytes:
        """An id's bytes; a WordPiece `##` piece's without its mark (the bytes it adds inside a
        chunk)."""
        return self._spelled[1][token]

    def chunks(self, text: str, index: int = 0) -> list[str]:
        return [text] if self.splitter is None else self.splitter.split(text, index)

    def encode_chunks(self, chunks: Sequence[str]) -> list[list[int]]:
        """Each chunk's ids (a chunk seen before, from the cache): Unigram's by the library,
        WordPiece's by `analyzer.wordpiece.encoder`, the library's ids in linear time (the
        library's own search is cubic in a chunk's length: 19 s for one of 10 kB)."""
        cache = self._chunk_ids
        new = list(dict.fromkeys(chunk for chunk in chunks if chunk not in cache))
        if new:
            found: list[list[int] | None] = [None] * len(new)
            if self.algorithm == Algorithm.WORDPIECE:
                found = self._wordpiece.encode(new)
            rest = [k for k, ids in enumerate(found) if ids is None]  # (a WordPiece chunk with
            if rest:                                                   # none: the library's)
                encoded = self.tokenizer.encode_batch(  # type: ignore[attr-defined]
                    [to_byte_chars(new[k]) for k in rest], add_special_tokens=False)
                for k, encoding in zip(rest, encoded):
                    found[k] = encoding.ids
            for chunk, ids in zip(new, found):
                cache[chunk] = ids  # type: ignore[assignment]
        return [cache[chunk] for chunk in chunks]

    @cached_property
    def _wordpiece(self):
        """WordPiece's encoder of this vocabulary (each id's string, `##` and all)."""
        return wordpiece.encoder(self._spelled[0])

    def encode(self, text: str) -> list[int]:
        return [token for ids in self.encode_chunks(self.chunks(text)) for token in ids]

    def pieces(self, text: str) -> list[tuple[int, bytes]]:
        """The text's tokens as (id, bytes)."""
        return self.spell(self.encode_chunks(self.chunks(text)))

    def spell(self, chunk_ids: Sequence[Sequence[int]]) -> list[tuple[int, bytes]]:
        """Each chunk's ids as (id, bytes), its first token whole: a WordPiece piece that
        begins a chunk is never a `##` one, even where its bytes begin with `##`."""
        whole, inner = self._spelled
        found = []
        for ids in chunk_ids:
            for position, token in enumerate(ids):
                found.append((token, whole[token] if position == 0 else inner[token]))
        return found

    def decode(self, chunk_ids: Sequence[Sequence[int]]) -> bytes:
        """The bytes the chunks' ids spell (the round trip)."""
        return b"".join(piece for _, piece in self.spell(chunk_ids))


def train_model(algorithm: Algorithm, chunk_counts: Mapping[str, int] | ChunkTable, size: int,
                pretokenizer: str, progress: UnigramProgress | None = None) -> LibraryModel:
    """Train `algorithm` on chunks and how often each occurs (the run's pre-tokenizer's chunks,
    weights applied: a dict, or packed, as a run gives them) to `size` entries (fewer where the
    text has no more pieces); `progress` hears of Unigram's rounds."""
    tokenizers = library()
    if size < min_size(algorithm):
        raise ValueError(f"{algorithm} needs a size of {min_size(algorithm)} or more (its byte "
                         f"symbols), not {size}")
    if algorithm == Algorithm.UNIGRAM:
        trained = unigram.train(chunk_counts, size, progress=progress)
        vocab = [(spell(piece), score) for piece, score in zip(trained.pieces, trained.scores)]
        tokenizer = tokenizers.Tokenizer(tokenizers.models.Unigram(vocab, None, False))
    else:
        # Ids 0..511 are the two byte alphabets in byte order (a byte's id is the byte, "##"
        # and the byte is 256 more), as Hugging Face's trainer numbers them when they are given
        # first as its "special tokens"; the pieces learned follow.
        pieces = (wordpiece.train_packed(chunk_counts, size) if isinstance(chunk_counts, ChunkTable)
                  else wordpiece.train(chunk_counts, size))
        tokenizer = tokenizers.Tokenizer(tokenizers.models.WordPiece(
            {spell(piece): token for token, piece in enumerate(pieces)}, unk_token="[UNK]",
            max_input_chars_per_word=UNLIMITED, continuing_subword_prefix=CONTINUING))
    document = json.loads(tokenizer.to_str())
    return model_from_document(algorithm, _with_pipeline(document, pretokenizer), pretokenizer)


def huggingface_wordpiece(chunk_counts: Mapping[str, int], size: int) -> list[str]:
    """Each id's piece (in byte symbols) as Hugging Face's own `WordPieceTrainer` trains them
    on the same chunks: what `train_model` ran before the analyzer had its own engine, kept to
    check `analyzer.wordpiece` against it (the tests, benchmarks/bench_wordpiece.py). Slow: the
    trainer takes no counts, each chunk goes in as often as it occurs."""
    tokenizers = library()
    if size < min_size(Algorithm.WORDPIECE):
        raise ValueError(f"wordpiece needs a size of 512 or more, not {size}")
    alphabet = list(BYTE_CHARS.values())
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordPiece(
        unk_token="[UNK]", max_input_chars_per_word=UNLIMITED))
    # Both byte alphabets go in first, in byte order, as the trainer's "special tokens" (plain
    # entries of the model): so every chunk can be spelled, and every symbol has the same id in
    # every training. The trainer breaks ties between equal pair counts by those ids, and would
    # otherwise number the symbols in the order of a hash map that differs from process to
    # process.
    trainer = tokenizers.trainers.WordPieceTrainer(
        vocab_size=size, special_tokens=[*alphabet, *(CONTINUING + c for c in alphabet)],
        show_progress=False, continuing_subword_prefix=CONTINUING)
    tokenizer.train_from_iterator(_sequences(chunk_counts), trainer, length=len(chunk_counts))
    vocab = tokenizer.get_vocab()
    return sorted(vocab, key=vocab.__getitem__)


def _sequences(chunk_counts: Mapping[str, int]) -> Iterator[list[str]]:
    """Batches of chunks in byte symbols, each chunk repeated as often as it occurs (the
    library's trainers take sequences, not counts)."""
    batch: list[str] = []
    for chunk, count in chunk_counts.items():
        batch.extend([to_byte_chars(chunk)] * count)
        if len(batch) >= SEQUENCE_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _with_pipeline(document: dict, pretokenizer: str) -> dict:
    """The trained model as a whole tokenizer.json its library loads and uses as the run did:
    no normalizer, the run's pre-tokenizer as a `Split` (its pattern, each chunk kept whole),
    then the byte-level alphabet; its decoder gives the bytes back."""
    splitter = resolve(pretokenizer)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                  "use_regex": False}  # the same step cuts nothing and maps bytes both ways
    steps = [byte_level]
    if splitter is not None:
        steps.insert(0, {"type": "Split", "pattern": {"Regex": splitter.pattern},
                         "behavior": "Isolated", "invert": False})
    document["normalizer"] = None
    document["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": steps}
    document["post_processor"] = None
    if document["model"]["type"] == "WordPiece":
        # Word-internal pieces lose their mark; the space the WordPiece decoder puts before a
        # chunk's first piece is not a byte symbol (a space is Ġ), so it is removed again.
        document["decoder"] = {"type": "Sequence", "decoders": [
            {"type": "WordPiece", "prefix": CONTINUING, "cleanup": False},
            {"type": "Replace", "pattern": {"String": " "}, "content": ""}, byte_level]}
    else:
        document["decoder"] = byte_level
    document["added_tokens"] = []
    return document


def model_from_document(algorithm: Algorithm, document: dict | bytes, pretokenizer: str
                        ) -> LibraryModel:
    """A model from its tokenizer.json (a stored one: `document` as bytes, kept byte for
    byte). The library's tokenizer encodes chunks here: its model alone, on chunks the run's
    pre-tokenizer cut and `to_byte_chars` wrote in byte symbols, as they were trained."""
    tokenizers = library()
    if isinstance(document, bytes):
        data = document
        parsed = json.loads(data)
    else:
        parsed = document
        data = json.dumps(document, ensure_ascii=False).encode("utf-8")
    tokenizer = tokenizers.Tokenizer.from_str(data.decode("utf-8"))
    tokenizer.pre_tokenizer = None  # chunks arrive cut, in byte symbols (`encode_chunks`)
    vocab = parsed["model"]["vocab"]
    if algorithm == Algorithm.UNIGRAM:
        pieces = [piece for piece, _score in vocab]
    else:
        pieces = sorted(vocab, key=vocab.__getitem__)
    return LibraryModel(algorithm, data, pretokenizer, tokenizer,
                        None if pretokenizer == NONE else resolve(pretokenizer), pieces)


def whole_tokenizer(document: bytes):
    """The stored tokenizer.json as its library loads it, pipeline and all (what an exported
    file gives a user)."""
    return library().Tokenizer.from_str(document.decode("utf-8"))
