"""Adapters: a tokenizer's files, as bytes, made into its own library's encoder.

Counting is always the library's (tiktoken, tokenizers, sentencepiece); an adapter only reads a
format that library does not read by itself into the arguments it takes. Every count is a text's
own tokens: special-token text is plain text, and nothing is added around a text (no BOS/EOS);
`Encoder.specials` says what the library would add (a run counts them with `special_tokens`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from analyzer.bpe.threads import available_cores
from analyzer.headroom import ARENA, check_address, stack_size
from analyzer.settings import byte_size

from . import engine_models
from .byte_level import BYTE_TOKEN, byte_level_bytes
from .catalog import CatalogEntry, Format
from .engine_models import EngineTokenizer
from .errors import TokenizerError

EXTRA = "pip install 'analyzer[tokenizers]'"

Count = Callable[[list[str]], list[int]]
TokenList = Callable[[], list[bytes]]
Pieces = Callable[[str], list[tuple[int, bytes]]]
"""A text's tokens as (id, the bytes it stands for), for showing a tokenization."""
Ids = Callable[[str], list[int]]
"""A text's tokens, as its library encodes it (the engine's definition, in the tests)."""
Normalization = Literal["NFC", "NFD", "NFKC", "NFKD"]


@dataclass(frozen=True)
class Encoder:
    count: Count
    """Tokens of each text."""
    size: int
    library: str
    """The library and its version, e.g. `tiktoken 0.14.0`."""
    pieces: Pieces
    specials: int = 0
    """The special tokens the library adds to each text by default (a tokenizer.json's
    post-processor: beginning- and end-of-text tokens); counted only when a run asks."""
    tokens: TokenList | None = None
    """Its vocabulary's ordinary tokens as the bytes each stands for (special and control
    tokens left out), for the scripts a vocabulary is written in and two vocabularies' overlap."""
    ids: Ids | None = None
    ids_batch: Callable[[list[str]], list[list[int]]] | None = None
    """Each text's tokens, in one call of its library's batch encoder (its fastest)."""
    spellings: Callable[[], list[bytes]] | None = None
    """What each id spells (by id; b"" for none), for the words its tokens split."""
    words_text: Callable[[str], str] | None = None
    """The text its split words are counted on, as its pieces spell it (its normaliser's;
    None: the text as given)."""
    make_engine: Callable[[], EngineTokenizer | str] = lambda: "counted by its library"
    """How the analyzer's engine counts it exactly as the library does (`engine_models`), or,
    in words, why it cannot: worked out when first asked (`engine`)."""

    @cached_property
    def engine(self) -> EngineTokenizer | str:
        return self.make_engine()


def build(entry: CatalogEntry, files: dict[str, bytes], label: str) -> Encoder:
    """The encoder of a catalog entry from its (verified) files, once its library has room
    to load them (`room_to_load`)."""
    data = files[entry.files[0].name]
    room_to_load(sum(map(len, files.values())), label, entry.format.library)
    if entry.format is Format.TIKTOKEN:
        assert entry.encoding is not None
        return openai_encoding(entry.encoding, files, {f.name: f.sha256 for f in entry.files})
    if entry.format is Format.TIKTOKEN_RANKS:
        assert entry.pattern is not None
        return _tiktoken(label, entry.pattern, rank_file(data, label), entry.special_tokens)
    if entry.format is Format.TEKKEN:
        return tekken(data, label)
    if entry.format is Format.TIKTOKEN_JS:
        return tiktoken_js(data, label, entry.normalization)
    if entry.format is Format.TOKENIZER_JSON:
        return tokenizer_json(data, label)
    return sentencepiece_model(data, label)


# --- tiktoken ---------------------------------------------------------------------------------


def _tiktoken_module():
    try:
        import tiktoken
    except ImportError:
        raise TokenizerError(f"counting needs tiktoken: {EXTRA}") from None
    return tiktoken


def _tiktoken_pieces(encoder, normalization: Normalization | None = None) -> Pieces:
    def pieces(text: str) -> list[tuple[int, bytes]]:
        if normalization is not None:
            text = unicodedata.normalize(normalization, text)
        return [(i, encoder.decode_single_token_bytes(i)) for i in encoder.encode_ordinary(text)]
    return pieces


def _tiktoken_spellings(encoder) -> Callable[[], list[bytes]]:
    def spellings() -> list[bytes]:
        found = []
        for token in range(encoder.n_vocab):
            try:
                found.append(encoder.decode_single_token_bytes(token))
            except KeyError:  # an id no token has
                found.append(b"")
        return found
    return spellings


LOADING_PER_BYTE = {"tiktoken": 22.5, "tokenizers": 24.0, "sentencepiece": 24.0}
"""The address space a tokenizer's first load maps at its peak, per byte of its files: the
library's load and the analyzer's own reading of the same files for its engine, measured
here: o200k_base's 3.6 MB rank file, 78 MB (21.7x); a tokenizer.json of 7.8 to 33 MB, 8.6x
to 15.9x by the library alone, and qwen3's first run 414 MB over the loaded command (23.7x
with the counting threads apart). SentencePiece (C++) is given the figure of tokenizer.json."""

def room_to_load(size: int, label: str, library: str) -> None:
    """Refused (`headroom.ShortOfAddress`), before `library` loads a tokenizer of `size`
    bytes, where `ulimit -v` leaves too little for loading it and then counting with it on a
    thread per core (each a stack and an arena). tiktoken and tokenizers are Rust, which
    aborts the process when an allocation fails (qwen3 at `ulimit -v 700000`, gemma3 at
    900000, first loaded: "memory allocation of 6 bytes failed", exit 134); and tiktoken's
    reader says a MemoryError as "Error parsing line ..." of a good file."""
    check_address(int(LOADING_PER_BYTE[library] * size)
                  + available_cores() * (ARENA + stack_size()),
                  f"Loading {label} ({byte_size(size)}) with {library}",
                  threads=available_cores())


def tiktoken_ids(encoder, texts: list[str], normalization: Normalization | None = None
                 ) -> list[list[int]]:
    """Each text's ids by tiktoken's batch encoder, on as many threads as this process has
    cores: tiktoken's own default is 8, each a stack and a malloc arena that a memory limit
    (`ulimit -v`) must hold, on any machine (an extension's count could not start its threads
    at limits its training fitted)."""
    if normalization is not None:
        texts = [unicodedata.normalize(normalization, text) for text in texts]
    return encoder.encode_ordinary_batch(texts, num_threads=available_cores())


def _tiktoken_batch(encoder, normalization: Normalization | None = None):
    return lambda texts: tiktoken_ids(encoder, texts, normalization)


def _counter(encoder, normalization: Normalization | None = None) -> Count:
    return lambda texts: [len(ids) for ids in tiktoken_ids(encoder, texts, normalization)]


def openai_encoding(encoding: str, files: dict[str, bytes], pinned: dict[str, str] | None) -> Encoder:
    """One of tiktoken's own encodings, built by tiktoken's constructor from the given files
    (by file name) instead of its downloads. With `pinned` (file name -> SHA-256), the hashes
    tiktoken expects must be the pinned ones; without, the files are a user's own ranks."""
    tiktoken = _tiktoken_module()
    arguments = openai_arguments(encoding, files, pinned)
    if pinned is None:  # the user's own ranks need not have the official vocabulary size
        arguments.pop("explicit_n_vocab", None)
    encoder = tiktoken.Encoding(**arguments)
    # n_vocab is the largest id + 1; a user's file's special-token ids follow the base encoding's
    # numbering, so count its tokens instead.
    size = encoder.n_vocab if pinned is not None else \
        len(arguments["mergeable_ranks"]) + len(arguments["special_tokens"])
    return Encoder(_counter(encoder), size, f"tiktoken {tiktoken.__version__}",
                   _tiktoken_pieces(encoder), tokens=encoder.token_byte_values,
                   ids=encoder.encode_ordinary, ids_batch=_tiktoken_batch(encoder),
                   spellings=_tiktoken_spellings(encoder),
                   make_engine=lambda: engine_models.from_ranks(arguments["mergeable_ranks"],
                                                                arguments["pat_str"]))


def openai_arguments(encoding: str, files: dict[str, bytes], pinned: dict[str, str] | None) -> dict:
    """What tiktoken's constructor of an OpenAI encoding gives `tiktoken.Encoding` (name,
    pat_str, mergeable_ranks, special_tokens), read from the given files."""
    tiktoken = _tiktoken_module()
    from tiktoken_ext import openai_public

    constructor = openai_public.ENCODING_CONSTRUCTORS.get(encoding)
    if constructor is None:
        raise TokenizerError(f"tiktoken {tiktoken.__version__} has no encoding {encoding!r}")
    try:
        with _serving(files, pinned):
            return constructor()
    except (ValueError, KeyError) as error:
        if isinstance(error.__cause__, MemoryError):  # tiktoken says any failure as a bad line
            raise error.__cause__ from None
        raise TokenizerError(f"{encoding}: not a valid rank file ({error})") from None


def placeholder_specials(first: int, n: int) -> dict[str, int]:
    """Special tokens of a rank file that names none: `n` ids from `first`. Their names never
    matter to a count, since special-token text is encoded as plain text."""
    return {f"<|special_{i}|>": first + i for i in range(n)}


@contextlib.contextmanager
def _serving(files: dict[str, bytes], pinned: dict[str, str] | None) -> Iterator[None]:
    """Let tiktoken's constructors read `files` (by the URL's last part) for the duration."""
    import tiktoken.load

    original = tiktoken.load.read_file_cached

    def read(url: str, expected_hash: str | None = None) -> bytes:
        name = url.rsplit("/", 1)[-1]
        if pinned is None:  # the user's ranks stand for the encoding's one rank file
            return next(iter(files.values()))
        if expected_hash is not None and pinned.get(name) != expected_hash:
            raise TokenizerError(f"the catalog pins {name} at SHA-256 {pinned.get(name)}, but "
                                 f"tiktoken expects {expected_hash}: update the catalog")
        return files[name]

    setattr(tiktoken.load, "read_file_cached", read)  # noqa: B010 (mypy: same signature)
    try:
        yield
    finally:
        setattr(tiktoken.load, "read_file_cached", original)  # noqa: B010


def rank_file(data: bytes, label: str) -> dict[bytes, int]:
    """A tiktoken rank file: a base64 token and its rank per line."""
    ranks = {}
    for number, line in enumerate(data.splitlines(), start=1):
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except ValueError:
            raise TokenizerError(f"{label}: line {number} is not `base64-token rank`") from None
    # tiktoken panics on a text with a byte that has no token (its byte-level BPE needs all 256)
    missing = [byte for byte in range(256) if bytes([byte]) not in ranks]
    if ranks and missing:
        raise TokenizerError(f"{label}: byte 0x{missing[0]:02x} has no token of its own (and "
                             f"{len(missing) - 1} other bytes): a byte-level BPE rank file "
                             "gives each of the 256 bytes a rank")
    return ranks


def _tiktoken(label: str, pattern: str, ranks: dict[bytes, int], specials: int) -> Encoder:
    tiktoken = _tiktoken_module()
    # Special tokens take the ids after the ranks.
    special = placeholder_specials(max(ranks.values(), default=-1) + 1, specials)
    try:
        encoder = tiktoken.Encoding(label, pat_str=pattern, mergeable_ranks=ranks,
                                    special_tokens=special)
    except ValueError as error:
        raise TokenizerError(f"{label}: tiktoken refuses it ({error})") from None
    return Encoder(_counter(encoder), encoder.n_vocab, f"tiktoken {tiktoken.__version__}",
                   _tiktoken_pieces(encoder), tokens=encoder.token_byte_values,
                   ids=encoder.encode_ordinary, ids_batch=_tiktoken_batch(encoder),
                   spellings=_tiktoken_spellings(encoder),
                   make_engine=lambda: engine_models.from_ranks(ranks, pattern))


def _json(data: bytes, label: str) -> dict:
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise TokenizerError(f"{label}: not JSON ({error})") from None
    if not isinstance(document, dict):
        raise TokenizerError(f"{label}: not a JSON object")
    return document


def tekken(data: bytes, label: str) -> Encoder:
    """Mistral's Tekken JSON: the first `default_vocab_size - default_num_special_tokens` ranks
    (ids shifted past the special tokens, which changes no count), split by its pattern."""
    document = _json(data, label)
    try:
        config = document["config"]
        inner = config["default_vocab_size"] - config["default_num_special_tokens"]
        ranks = {base64.b64decode(token["token_bytes"]): token["rank"]
                 for token in document["vocab"][:inner]}
        encoder = _tiktoken(label, config["pattern"], ranks, 0)
    except (KeyError, TypeError, ValueError) as error:
        raise TokenizerError(f"{label}: not a Tekken tokenizer ({type(error).__name__}: {error})") from None
    shift = config["default_num_special_tokens"]  # Mistral's ids follow the special tokens
    return Encoder(encoder.count, config["default_vocab_size"], encoder.library,
                   lambda text: [(i + shift, piece) for i, piece in encoder.pieces(text)],
                   tokens=encoder.tokens, ids=encoder.ids, ids_batch=encoder.ids_batch,
                   spellings=encoder.spellings, make_engine=lambda: encoder.engine)


def tiktoken_js(data: bytes, label: str, normalization: Normalization | None) -> Encoder:
    """js-tiktoken's "lite" JSON (`bpe_ranks`: per line, a label, the first rank, then base64
    tokens of consecutive ranks), its special tokens and pattern; text normalised first."""
    tiktoken = _tiktoken_module()
    document = _json(data, label)
    try:
        ranks = {}
        for line in document["bpe_ranks"].split("\n"):
            if not line:
                continue
            _, first, *tokens = line.split(" ")
            for offset, token in enumerate(tokens):
                ranks[base64.b64decode(token)] = int(first) + offset
        encoder = tiktoken.Encoding(label, pat_str=document["pat_str"], mergeable_ranks=ranks,
                                    special_tokens=dict(document["special_tokens"]))
    except (KeyError, TypeError, ValueError) as error:
        raise TokenizerError(f"{label}: not a js-tiktoken JSON ({type(error).__name__}: {error})") from None
    return Encoder(_counter(encoder, normalization), encoder.n_vocab, f"tiktoken {tiktoken.__version__}",
                   _tiktoken_pieces(encoder, normalization), tokens=encoder.token_byte_values,
                   ids=lambda text: encoder.encode_ordinary(
                       unicodedata.normalize(normalization, text) if normalization else text),
                   ids_batch=_tiktoken_batch(encoder, normalization),
                   spellings=_tiktoken_spellings(encoder),
                   words_text=engine_models.words_text_of(normalization),
                   make_engine=lambda: engine_models.from_ranks(ranks, document["pat_str"],
                                                                normalization))


# --- Hugging Face tokenizers and SentencePiece ------------------------------------------------


def tokenizer_json(data: bytes, label: str) -> Encoder:
    try:
        import tokenizers
    except ImportError:
        raise TokenizerError(f"{label} needs Hugging Face tokenizers: {EXTRA}") from None
    try:
        tokenizer = tokenizers.Tokenizer.from_str(data.decode("utf-8"))
    except MemoryError:
        raise
    except Exception as error:  # the Rust side raises plain Exception
        raise TokenizerError(f"{label}: not a Hugging Face tokenizer.json ({error})") from None
    tokenizer.encode_special_tokens = True  # special tokens in the text are plain text
    document = json.loads(data)
    spelled: dict[int, bytes] = {}

    def count(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]

    def pieces(text: str) -> list[tuple[int, bytes]]:
        # Each token's own bytes: a token that holds part of a character shows that part, as
        # tiktoken's do (the character's offsets would give it whole to the first).
        if not spelled:
            spelled.update(_token_bytes(tokenizer, document))
        return [(token, spelled.get(token, b"")) for token in
                tokenizer.encode(text, add_special_tokens=False).ids]

    # What the post-processor adds around a text (TemplateProcessing: the same for every text).
    specials = len(tokenizer.encode("a", add_special_tokens=True).ids) - len(
        tokenizer.encode("a", add_special_tokens=False).ids)
    return Encoder(count, tokenizer.get_vocab_size(), f"tokenizers {tokenizers.__version__}", pieces,
                   specials, lambda: _json_tokens(tokenizer, document),
                   ids=lambda text: tokenizer.encode(text, add_special_tokens=False).ids,
                   ids_batch=lambda texts: [e.ids for e in tokenizer.encode_batch(
                       texts, add_special_tokens=False)],
                   spellings=lambda: _by_id(_token_bytes(tokenizer, document)),
                   words_text=engine_models.words_text_of(document.get("normalizer")),
                   make_engine=lambda: engine_models.from_tokenizer_json(document))


def sentencepiece_model(data: bytes, label: str) -> Encoder:
    try:
        import sentencepiece
    except ImportError:
        raise TokenizerError(f"{label} needs sentencepiece: {EXTRA}") from None
    try:
        processor = sentencepiece.SentencePieceProcessor(model_proto=data)
    except MemoryError:
        raise
    except Exception as error:
        raise TokenizerError(f"{label}: not a SentencePiece model ({error})") from None

    def count(texts: list[str]) -> list[int]:
        return [len(ids) for ids in processor.encode(texts)]

    def pieces(text: str) -> list[tuple[int, bytes]]:
        # A piece's "▁" is a space; byte pieces are named <0xAB>.
        return [(i, bytes([int(processor.id_to_piece(i)[3:5], 16)]) if processor.is_byte(i)
                 else processor.id_to_piece(i).replace("\u2581", " ").encode("utf-8"))
                for i in processor.encode(text)]

    def tokens() -> list[bytes]:
        return [bytes([int(processor.id_to_piece(i)[3:5], 16)]) if processor.is_byte(i)
                else processor.id_to_piece(i).replace("\u2581", " ").encode("utf-8")
                for i in range(processor.get_piece_size())
                if not (processor.is_control(i) or processor.is_unknown(i))]

    def spellings() -> list[bytes]:
        return [bytes([int(processor.id_to_piece(i)[3:5], 16)]) if processor.is_byte(i)
                else processor.id_to_piece(i).replace("\u2581", " ").encode("utf-8")
                for i in range(processor.get_piece_size())]

    return Encoder(count, processor.get_piece_size(), f"sentencepiece {sentencepiece.__version__}",
                   pieces, tokens=tokens, ids=processor.encode, ids_batch=processor.encode,
                   spellings=spellings,
                   make_engine=lambda: "a SentencePiece model: counted by its library")




def _token_bytes(tokenizer, document: dict) -> dict[int, bytes]:
    """Every token of a tokenizer.json as the bytes it stands for: a byte-level model's spelled
    back from its byte alphabet, another's with "▁" as a space, byte-fallback tokens as their
    byte and WordPiece's "##" continuation mark dropped."""
    byte_level = '"ByteLevel"' in json.dumps([document.get("pre_tokenizer"),
                                               document.get("decoder")])
    prefix = ((document.get("model") or {}).get("continuing_subword_prefix") or "")
    found = {}
    for token, i in tokenizer.get_vocab().items():
        spelled = byte_level_bytes(token) if byte_level else None
        if spelled is not None:
            found[i] = spelled
            continue
        byte = BYTE_TOKEN.fullmatch(token)
        if byte:
            found[i] = bytes([int(byte.group(1), 16)])
            continue
        if prefix and token.startswith(prefix) and token != prefix:
            token = token[len(prefix):]
        found[i] = token.replace("\u2581", " ").encode("utf-8")
    return found


def _by_id(found: dict[int, bytes]) -> list[bytes]:
    table = [b""] * (max(found, default=-1) + 1)
    for i, piece in found.items():
        table[i] = piece
    return table


def _json_tokens(tokenizer, document: dict) -> list[bytes]:
    """A tokenizer.json's ordinary tokens as bytes (`_token_bytes`), its special added tokens
    left out."""
    specials = {token["id"] for token in document.get("added_tokens") or [] if token.get("special")}
    return [piece for i, piece in _token_bytes(tokenizer, document).items() if i not in specials]
