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
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from .catalog import CatalogEntry, Format
from .errors import TokenizerError

EXTRA = "pip install 'analyzer[tokenizers]'"

Count = Callable[[list[str]], list[int]]
TokenList = Callable[[], list[bytes]]
Pieces = Callable[[str], list[tuple[int, bytes]]]
"""A text's tokens as (id, the bytes it stands for), for showing a tokenization."""
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


def build(entry: CatalogEntry, files: dict[str, bytes], label: str) -> Encoder:
    """The encoder of a catalog entry from its (verified) files."""
    data = files[entry.files[0].name]
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


def byte_level_alphabet() -> dict[int, str]:
    """GPT-2's byte-level alphabet, as Hugging Face's ByteLevel uses it: each byte as a
    printable character (printable Latin-1 bytes as themselves, the rest from U+0100 on)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    alphabet, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            alphabet[byte] = chr(byte)
        else:
            alphabet[byte] = chr(256 + extra)
            extra += 1
    return alphabet


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


def _counter(encoder, normalization: Normalization | None = None) -> Count:
    if normalization is None:
        return lambda texts: [len(ids) for ids in encoder.encode_ordinary_batch(texts)]
    return lambda texts: [len(ids) for ids in encoder.encode_ordinary_batch(
        [unicodedata.normalize(normalization, t) for t in texts])]


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
                   _tiktoken_pieces(encoder), tokens=encoder.token_byte_values)


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
                   _tiktoken_pieces(encoder), tokens=encoder.token_byte_values)


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
                   tokens=encoder.tokens)


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
                   _tiktoken_pieces(encoder, normalization), tokens=encoder.token_byte_values)


# --- Hugging Face tokenizers and SentencePiece ------------------------------------------------


def tokenizer_json(data: bytes, label: str) -> Encoder:
    try:
        import tokenizers
    except ImportError:
        raise TokenizerError(f"{label} needs Hugging Face tokenizers: {EXTRA}") from None
    try:
        tokenizer = tokenizers.Tokenizer.from_str(data.decode("utf-8"))
    except Exception as error:  # the Rust side raises plain Exception
        raise TokenizerError(f"{label}: not a Hugging Face tokenizer.json ({error})") from None
    tokenizer.encode_special_tokens = True  # special tokens in the text are plain text

    def count(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]

    def pieces(text: str) -> list[tuple[int, bytes]]:
        # Offsets are characters of the text; a character split over several tokens (byte
        # fallback) shows whole on the first and empty on the rest.
        found, shown = [], 0
        for token, (start, end) in zip(*(lambda e: (e.ids, e.offsets))(
                tokenizer.encode(text, add_special_tokens=False))):
            start = max(start, shown)
            found.append((token, text[start:end].encode("utf-8")))
            shown = max(shown, end)
        return found

    # What the post-processor adds around a text (TemplateProcessing: the same for every text).
    specials = len(tokenizer.encode("a", add_special_tokens=True).ids) - len(
        tokenizer.encode("a", add_special_tokens=False).ids)
    return Encoder(count, tokenizer.get_vocab_size(), f"tokenizers {tokenizers.__version__}", pieces,
                   specials, lambda: _json_tokens(tokenizer, data))


def sentencepiece_model(data: bytes, label: str) -> Encoder:
    try:
        import sentencepiece
    except ImportError:
        raise TokenizerError(f"{label} needs sentencepiece: {EXTRA}") from None
    try:
        processor = sentencepiece.SentencePieceProcessor(model_proto=data)
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

    return Encoder(count, processor.get_piece_size(), f"sentencepiece {sentencepiece.__version__}",
                   pieces, tokens=tokens)


BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")
"""A byte-fallback token's name (SentencePiece's, and tokenizer.json models made from them)."""


def _json_tokens(tokenizer, data: bytes) -> list[bytes]:
    """A tokenizer.json's ordinary tokens as bytes: a byte-level model's spelled back from its
    byte alphabet, another's with "▁" as a space, byte-fallback tokens as their byte and
    WordPiece's "##" continuation mark dropped; its special added tokens left out."""
    document = json.loads(data)
    specials = {token["content"] for token in document.get("added_tokens") or []
                if token.get("special")}
    byte_level = '"ByteLevel"' in json.dumps([document.get("pre_tokenizer"),
                                               document.get("decoder")])
    chars = {char: byte for byte, char in byte_level_alphabet().items()}
    prefix = ((document.get("model") or {}).get("continuing_subword_prefix") or "")
    found = []
    for token in tokenizer.get_vocab():
        if token in specials:
            continue
        if byte_level and all(char in chars for char in token):
            found.append(bytes(chars[char] for char in token))
            continue
        byte = BYTE_TOKEN.fullmatch(token)
        if byte:
            found.append(bytes([int(byte.group(1), 16)]))
            continue
        if prefix and token.startswith(prefix) and token != prefix:
            token = token[len(prefix):]
        found.append(token.replace("\u2581", " ").encode("utf-8"))
    return found
