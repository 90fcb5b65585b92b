"""Production tokenizers as bases to extend: texts cut and encoded by the base's own library,
merges added over its ids (`analyzer.bpe.added`), and the extended tokenizer written back in
the base's own format, for its library to load.

    base = extension_base("o200k_base")
    extended = Extended(base, merges)          # merges learned over base.encode_chunks(...)
    extended.count(["नमस्ते दुनिया"])             # the base's pre-tokenizer, ids, then the merges
    extended.write(Path("out"))                # o200k_base+N.tiktoken and its settings

Two kinds of base are extendable, the byte-level BPE ones whose merges are known:
- tiktoken rank files (cl100k_base, o200k_base, gpt2, llama3, llama4): ranks are merges in
  order, so added tokens take the ranks after every id the base has (special tokens included);
- Hugging Face tokenizer.json files with a byte-level BPE model (qwen3, deepseek-v3, hf:...):
  the added tokens join the vocabulary and their merges follow the base's.

Others are refused with the reason: SentencePiece models (mistral-v1, mistral-v3) and
tokenizer.json files that are not byte-level BPE (gemma3: pieces with byte fallback) have no
merge list over bytes to continue, and Tekken and js-tiktoken files are not written back yet.
"""

from __future__ import annotations

import base64
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import regex

from analyzer.bpe.added import AddedMerges, RankedMerges
from analyzer.bpe.pretokenize import Pretokenizer
from analyzer.bpe.reference import Merge

from . import formats
from .byte_level import byte_level_alphabet
from .catalog import Format, catalog, entry
from .errors import TokenizerError
from .tokenizers import HF_PREFIX, _sources, catalog_files, hugging_face_file


class AddedToken(NamedTuple):
    """An added token as a file writes it: its parts' bytes, its bytes, its id."""

    left: bytes
    right: bytes
    token: bytes
    id: int


EXTENDABLE = (Format.TIKTOKEN, Format.TIKTOKEN_RANKS, Format.TOKENIZER_JSON)
"""The catalog formats a base can have (a tokenizer.json must also be byte-level BPE)."""


class ExtensionBase(ABC):
    """A production tokenizer as the start of continued training."""

    name: str
    size: int
    """Every id the base has, special tokens included: added ids start here."""
    library: str
    source: str
    pattern: str
    """How the base cuts texts into chunks, in words (its split pattern)."""

    def normalize(self, text: str) -> str:
        """The text as the base reads it (its normaliser's; most bases have none)."""
        return text

    def added_merges(self, merges: Sequence[Merge]) -> AddedMerges:
        """Merges over this base's ids, applied as its library applies a written extension:
        by pair (a tokenizer.json's merges)."""
        return AddedMerges(merges, self.size, self.token_bytes)

    @abstractmethod
    def split(self, text: str, index: int = 0) -> list[str]:
        """The text's chunks, as the base cuts them (a pre-tokenizer for `analyzer.bpe`)."""

    @abstractmethod
    def encode_chunks(self, chunks: Sequence[str]) -> list[list[int]]:
        """Each chunk's ids under the base."""

    @abstractmethod
    def token_bytes(self, token: int) -> bytes:
        """The bytes a base id stands for."""

    @abstractmethod
    def count(self, texts: list[str]) -> list[int]:
        """Tokens of each text, by the base's own library (the +0 point)."""

    @abstractmethod
    def write(self, added: list[AddedToken], directory: Path, name: str) -> list[Path]:
        """Write the base with the added tokens, in order, in its own format."""

    @abstractmethod
    def load_written(self, directory: Path, name: str) -> formats.Count:
        """The counter of what `write` wrote, by the base's library: the export's check."""


class TiktokenBase(ExtensionBase):
    """A tiktoken encoding: a split pattern, ranks of byte strings, special tokens."""

    def __init__(self, name: str, pat_str: str, ranks: dict[bytes, int],
                 special_tokens: dict[str, int], source: str):
        tiktoken = formats._tiktoken_module()
        self.name, self.pattern, self.ranks, self.specials = name, pat_str, ranks, special_tokens
        self.source = source
        self.size = max([*ranks.values(), *special_tokens.values()]) + 1
        self.library = f"tiktoken {tiktoken.__version__}"
        self._encoding = tiktoken.Encoding(name, pat_str=pat_str, mergeable_ranks=ranks,
                                           special_tokens=special_tokens)
        self._splitter = Pretokenizer(f"{name}'s pattern", pat_str, regex.compile(pat_str))

    def split(self, text: str, index: int = 0) -> list[str]:
        return self._splitter.split(text, index)

    def added_merges(self, merges: Sequence[Merge]) -> AddedMerges:
        # tiktoken reads a rank file by bytes, so an extension counts as tiktoken counts it.
        return RankedMerges(merges, self.size, self.ranks, self.token_bytes)

    def encode_chunks(self, chunks: Sequence[str]) -> list[list[int]]:
        # One call per chunk: encode_ordinary_batch's thread pool costs more than it saves on
        # chunks of a few bytes. A chunk is one piece of the pattern, so encoding re-splits
        # nothing (and the run checks every unit's count against the library's own).
        encode = self._encoding.encode_ordinary
        return [encode(chunk) for chunk in chunks]

    def token_bytes(self, token: int) -> bytes:
        return self._encoding.decode_single_token_bytes(token)

    def count(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in formats.tiktoken_ids(self._encoding, texts)]

    def write(self, added: list[AddedToken], directory: Path, name: str) -> list[Path]:
        new_ranks: dict[bytes, int] = {}
        for token in added:
            if token.token in new_ranks or token.token in self.ranks:
                raise TokenizerError(f"added token {token.id} ({token.token!r}) is already a "
                                     f"token of {self.name}: a rank file cannot hold it twice")
            new_ranks[token.token] = token.id
        ranks = directory / f"{name}.tiktoken"
        settings = directory / f"{name}.json"
        lines = [f"{base64.b64encode(token).decode()} {rank}"
                 for token, rank in [*sorted(self.ranks.items(), key=lambda item: item[1]),
                                     *new_ranks.items()]]
        ranks.write_text("\n".join(lines) + "\n", encoding="ascii")
        settings.write_text(json.dumps({
            "name": name, "base": self.name, "pat_str": self.pattern,
            "special_tokens": self.specials, "ranks_file": ranks.name,
            "added_tokens": len(added), "n_vocab": self.size + len(added),
            "load": "tiktoken.Encoding(name, pat_str=..., mergeable_ranks="
                    "tiktoken.load.load_tiktoken_bpe(ranks_file), special_tokens=...)",
        }, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return [ranks, settings]

    def load_written(self, directory: Path, name: str) -> formats.Count:
        tiktoken = formats._tiktoken_module()
        from tiktoken.load import load_tiktoken_bpe

        settings = json.loads((directory / f"{name}.json").read_text(encoding="utf-8"))
        path = directory / settings["ranks_file"]
        formats.room_to_load(path.stat().st_size, name, "tiktoken")
        ranks = load_tiktoken_bpe(str(path))
        encoding = tiktoken.Encoding(name, pat_str=settings["pat_str"], mergeable_ranks=ranks,
                                     special_tokens=settings["special_tokens"])
        return lambda texts: [len(ids) for ids in formats.tiktoken_ids(encoding, texts)]


class TokenizerJsonBase(ExtensionBase):
    """A Hugging Face tokenizer.json with a byte-level BPE model."""

    def __init__(self, name: str, data: bytes, source: str):
        try:
            import tokenizers
        except ImportError:
            raise TokenizerError(f"{name} needs Hugging Face tokenizers: {formats.EXTRA}") from None
        document = formats._json(data, name)
        model = document.get("model") or {}
        if model.get("type") != "BPE" or model.get("byte_fallback") or \
                "ByteLevel" not in json.dumps(document.get("pre_tokenizer")):
            raise TokenizerError(
                f"{name} is not a byte-level BPE tokenizer (its model is "
                f"{model.get('type')!r}{', with byte fallback' if model.get('byte_fallback') else ''}"
                "): its pieces are not a merge list over bytes, so it cannot be extended; "
                "extend a tiktoken or byte-level tokenizer.json base (o200k_base, llama3, qwen3)")
        self.name, self.source, self.document = name, source, document
        self._tokenizer = tokenizers.Tokenizer.from_str(data.decode("utf-8"))
        self._tokenizer.encode_special_tokens = True
        self.size = self._tokenizer.get_vocab_size(with_added_tokens=True)
        self.library = f"tokenizers {tokenizers.__version__}"
        self.pattern = "its tokenizer.json pre-tokenizer"
        self._alphabet = byte_level_alphabet()
        self._byte_of = {char: byte for byte, char in self._alphabet.items()}

    def normalize(self, text: str) -> str:
        normalizer = self._tokenizer.normalizer
        return text if normalizer is None else normalizer.normalize_str(text)

    def split(self, text: str, index: int = 0) -> list[str]:
        text = self.normalize(text)
        return [piece for piece, _ in self._tokenizer.pre_tokenizer.pre_tokenize_str(text)]

    def encode_chunks(self, chunks: Sequence[str]) -> list[list[int]]:
        model = self._tokenizer.model
        return [[token.id for token in model.tokenize(chunk)] for chunk in chunks]

    def token_bytes(self, token: int) -> bytes:
        piece = self._tokenizer.id_to_token(token)
        if piece is None:
            raise ValueError(f"unknown token id {token!r} of {self.name}")
        try:
            return bytes(self._byte_of[char] for char in piece)
        except KeyError:  # an added (special) token: its text as it is
            return piece.encode("utf-8")

    def count(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts, add_special_tokens=False)]

    def write(self, added: list[AddedToken], directory: Path, name: str) -> list[Path]:
        """The tokenizer.json with each token added: in the vocabulary, and its merge after
        the base's, in the file's own notation."""
        document = json.loads(json.dumps(self.document))
        model = document["model"]
        strings = model["merges"]
        as_lists = bool(strings) and isinstance(strings[0], list)
        for token in added:
            piece = self.as_piece(token.token)
            if piece in model["vocab"]:
                raise TokenizerError(f"added token {token.id} ({token.token!r}) is already a "
                                     f"token of {self.name}")
            parts = [self.as_piece(token.left), self.as_piece(token.right)]
            strings.append(parts if as_lists else " ".join(parts))
            model["vocab"][piece] = token.id
        path = directory / f"{name}.tokenizer.json"
        path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        return [path]

    def as_piece(self, token: bytes) -> str:
        return "".join(self._alphabet[byte] for byte in token)

    def load_written(self, directory: Path, name: str) -> formats.Count:
        data = (directory / f"{name}.tokenizer.json").read_bytes()
        formats.room_to_load(len(data), name, "tokenizers")
        encoder = formats.tokenizer_json(data, name)
        return encoder.count


def extension_base(spec: str, downloads: bool = False) -> ExtensionBase:
    """The base a name stands for (a catalog name or hf:ORG/NAME); TokenizerError saying why
    one cannot be extended."""
    if spec.startswith(HF_PREFIX):
        data, where = hugging_face_file(spec, downloads)
        formats.room_to_load(len(data), spec, "tokenizers")
        return TokenizerJsonBase(spec, data, where)
    if spec not in catalog():
        raise TokenizerError(f"cannot extend {spec!r}: name a catalog tokenizer "
                             f"({', '.join(extendable_names())} can be extended) or hf:ORG/NAME")
    item = entry(spec)
    if item.format not in EXTENDABLE:
        why = {Format.SENTENCEPIECE: "a SentencePiece model, whose pieces are not a merge list "
                                     "over bytes",
               Format.TEKKEN: "a Tekken file, which the analyzer does not write back yet",
               Format.TIKTOKEN_JS: "a js-tiktoken file with its own normalisation, which the "
                                   "analyzer does not write back yet"}[item.format]
        raise TokenizerError(f"cannot extend {spec}: it is {why}; these can be extended: "
                             f"{', '.join(extendable_names())}")
    found = catalog_files(item, None, downloads)
    files = {name: f.data for name, f in found.items()}
    source = _sources(found)
    formats.room_to_load(sum(map(len, files.values())), spec, item.format.library)
    if item.format is Format.TOKENIZER_JSON:
        base: ExtensionBase = TokenizerJsonBase(spec, files[item.files[0].name], source)
    elif item.format is Format.TIKTOKEN:
        assert item.encoding is not None
        arguments = formats.openai_arguments(item.encoding, files,
                                             {f.name: f.sha256 for f in item.files})
        base = TiktokenBase(spec, arguments["pat_str"], arguments["mergeable_ranks"],
                            arguments["special_tokens"], source)
    else:
        assert item.pattern is not None
        ranks = formats.rank_file(files[item.files[0].name], spec)
        base = TiktokenBase(spec, item.pattern, ranks, formats.placeholder_specials(
            max(ranks.values()) + 1, item.special_tokens), source)
    if base.size != item.vocab_size:
        raise TokenizerError(f"{spec}: {base.library} gives {base.size:,} ids, the catalog "
                             f"{item.vocab_size:,}: the catalog or the library is wrong")
    return base


def extendable_names() -> list[str]:
    """The catalog tokenizers that can be extended: an extendable format, byte-level (a
    tokenizer.json's document is checked again when it is loaded)."""
    return [name for name, item in catalog().items()
            if item.format in EXTENDABLE and item.byte_level]


class Extended:
    """A base with merges added over its ids: encoding, counting and writing it."""

    def __init__(self, base: ExtensionBase, merges: Sequence[Merge]):
        self.base = base
        self.added = base.added_merges(merges)

    @property
    def size(self) -> int:
        return self.added.size

    def token_bytes(self, token: int) -> bytes:
        return self.added.token_bytes(token)

    def encode(self, text: str, size: int | None = None) -> list[int]:
        """The text's ids with the added merges up to `size` (default: all)."""
        n = None if size is None else size - self.base.size
        chunks = self.base.split(text)
        return [token for ids in self.base.encode_chunks(chunks)
                for token in self.added.apply(ids, n)]

    def pieces(self, text: str, size: int | None = None) -> list[tuple[int, bytes]]:
        return [(token, self.token_bytes(token)) for token in self.encode(text, size)]

    def write(self, directory: Path, size: int | None = None) -> list[Path]:
        """Write the base with the added tokens up to `size` into `directory`, named
        `BASE+N`; TokenizerError if an added token's bytes are already one of the base's."""
        n = len(self.added.pairs) if size is None else size - self.base.size
        directory.mkdir(parents=True, exist_ok=True)
        added = [AddedToken(self.token_bytes(left), self.token_bytes(right),
                            self.token_bytes(self.base.size + k), self.base.size + k)
                 for k, (left, right) in enumerate(self.added.pairs[:n])]
        return self.base.write(added, directory, self.written_name(size))

    def written_name(self, size: int | None = None) -> str:
        """`BASE+N`, the written files' name (N added tokens)."""
        n = len(self.added.pairs) if size is None else size - self.base.size
        return f"{self.base.name.replace('/', '_').replace(':', '_')}+{n}"
