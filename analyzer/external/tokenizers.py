"""Production tokenizers by name: catalog entries, Hugging Face repositories and files, each
counted by its own library's encoder (never re-implemented).

    resolve_tokenizer("cl100k_base").count(["hello world"])   # [2]

A spec is one of:
- a catalog name (`analyzer tokenizers` lists them): `llama3`, `gemma3`, `cl100k_base`, ...;
- `NAME=FILE`: that catalog tokenizer, read from a file you have (its hash must match);
- `hf:ORG/NAME[@REVISION]`: the repository's tokenizer.json, from the Hugging Face cache (or
  downloaded, unless ANALYZER_OFFLINE or HF_HUB_OFFLINE is set);
- a file of your own: `FILE.tiktoken@ENCODING` (ranks following a tiktoken encoding's pattern and
  special tokens), a `tokenizer.json`, or a SentencePiece `.model`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from analyzer.errors import did_you_mean
from analyzer.hub import HUB_PREFIX, hub_failure, offline_reason

from . import formats, loaded
from .catalog import CatalogEntry, Format, catalog, entry, unknown_tokenizer
from .errors import TokenizerError
from .local_store import digest
from .locate import Found, Locator, check_hub_name, hf_cached, hf_download, hf_offline

HF_PREFIX = HUB_PREFIX
ALL_AVAILABLE = "all-available"


class ProductionTokenizer:
    """A production tokenizer, ready to count: its files found and verified when it is
    resolved; its library's encoder built when it is first used, once per process
    (`analyzer.external.loaded`), so that a run's settings are checked without loading any (a
    catalog tokenizer: its files are the pinned ones; a file or a hub repository's, built as
    it is resolved, so that a bad one is refused then).

    `name`, `source` (where each file came from, with its SHA-256) and `entry` (the catalog
    entry, when it is one) are known at once; the rest is the encoder's: `count` (tokens of
    each text: the text's own, special-token text as plain text, no BOS/EOS), `size`,
    `library` (the library and its version), `pieces` (a text's tokens as (id, bytes), for
    showing them), `specials` (the special tokens its library adds to each text: a
    tokenizer.json's BOS/EOS) and `tokens` (its vocabulary's ordinary tokens as bytes)."""

    def __init__(self, name: str, source: str, key: tuple, size: int,
                 build: Callable[[], formats.Encoder], entry: CatalogEntry | None = None):
        self.name = name
        self.source = source
        self.entry = entry
        self._key, self._bytes, self._build = key, size, build

    @property
    def encoder(self) -> formats.Encoder:
        return loaded.encoder(self._key, self._bytes, self._build)

    @property
    def count(self) -> formats.Count:
        return self.encoder.count

    @property
    def size(self) -> int:
        return self.encoder.size

    @property
    def library(self) -> str:
        return self.encoder.library

    @property
    def pieces(self) -> formats.Pieces | None:
        return self.encoder.pieces

    @property
    def specials(self) -> int:
        return self.encoder.specials

    @property
    def tokens(self) -> formats.TokenList | None:
        return self.encoder.tokens

    def __repr__(self) -> str:
        return f"ProductionTokenizer({self.name!r})"


def resolve_tokenizer(spec: str, downloads: bool = True) -> ProductionTokenizer:
    """The tokenizer a spec names (see the module's docstring). `downloads=False` looks only on
    this machine. TokenizerError says what was tried, refused, or is missing."""
    name, equals, explicit = spec.partition("=")
    if equals and name in catalog():
        return from_catalog(entry(name), Path(explicit), downloads)
    if spec in catalog():
        return from_catalog(entry(spec), None, downloads)
    if spec.startswith(HF_PREFIX):
        return from_hugging_face(spec, downloads)
    if equals and not _exists(Path(spec.partition("@")[0])):  # NAME=FILE, NAME not the catalog's
        raise TokenizerError(f"{spec}: NAME=FILE gives the file of a catalog tokenizer, and "
                             f"{name!r} is not one{did_you_mean(name, catalog()) or '.'} A "
                             f"tokenizer file of your own is given alone: FILE, or FILE@BASE for a "
                             f".tiktoken (e.g. {Path(explicit.partition('@')[0]).name or 'my.tiktoken'}"
                             "@cl100k_base)")
    return from_file(spec)


def from_catalog(item: CatalogEntry, explicit: Path | None = None,
                 downloads: bool = True) -> ProductionTokenizer:
    if explicit is not None and len(item.files) != 1:
        raise TokenizerError(f"{item.name}=FILE: {item.name} needs {len(item.files)} files "
                             f"({', '.join(f.name for f in item.files)}); put them in the store "
                             f"with analyzer tokenizers get {item.name}")
    found = catalog_files(item, explicit, downloads)

    def build() -> formats.Encoder:  # on first use: the files are the pinned ones
        encoder = formats.build(item, {name: f.data for name, f in found.items()}, item.name)
        if encoder.size != item.vocab_size:
            raise TokenizerError(f"{item.name}: {encoder.library} gives {encoder.size:,} tokens, "
                                 f"the catalog {item.vocab_size:,}: the catalog or the library "
                                 "is wrong")
        return encoder

    if importlib.util.find_spec(item.library) is None:
        build()  # refused now, as its library refuses: it is not there
    return ProductionTokenizer(item.name, _sources(found),  # the entry whole: its files' hashes
                               (item.name, item.model_dump_json()),  # and how they are read
                               sum(len(f.data) for f in found.values()), build, item)


def catalog_files(item: CatalogEntry, explicit: Path | None = None,
                  downloads: bool = True) -> dict[str, Found]:
    """An entry's files, each found and verified (TokenizerError says what was tried)."""
    locator = Locator(item, explicit, downloads)
    return {file.name: locator.find(file) for file in item.files}


def from_hugging_face(spec: str, downloads: bool = True) -> ProductionTokenizer:
    """`hf:ORG/NAME[@REVISION]`: its tokenizer.json, unpinned (its hash is recorded)."""
    data, where = hugging_face_file(spec, downloads)
    return _built(ProductionTokenizer(spec, where, (spec, digest(data)), len(data),
                                      lambda: formats.tokenizer_json(data, spec)))


def hugging_face_file(spec: str, downloads: bool = True) -> tuple[bytes, str]:
    """`hf:ORG/NAME[@REVISION]`'s tokenizer.json and where it came from (with its SHA-256)."""
    repo, at, revision = spec[len(HF_PREFIX):].partition("@")
    check_hub_name(spec, repo, revision if at else None)
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise TokenizerError(f"{spec} needs huggingface_hub: {formats.EXTRA}") from None
    path = hf_cached(repo, "tokenizer.json", revision or None)
    where = "Hugging Face cache"
    if path is None:
        if not downloads or hf_offline():
            why = "downloads are off" + (f" ({offline_reason()})" if hf_offline() else
                                         " (this lists what this machine has)")
            raise TokenizerError(f"{spec}: tokenizer.json is not in the Hugging Face cache and "
                                 f"{why}; run once online, or: hf download {repo} tokenizer.json")
        try:
            path = hf_download(repo, "tokenizer.json", revision or None)
        except Exception as error:  # gated, missing, no network: say which
            raise TokenizerError(f"{spec}: could not get tokenizer.json: "
                                 f"{hub_failure(error)}") from None
        where = "downloaded from Hugging Face"
    data = path.read_bytes()
    return data, f"{where} {path} (SHA-256 {digest(data)})"


def _exists(path: Path) -> bool:
    """Whether a path exists; False for a name no path can be (too long, a NUL in it)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def from_file(spec: str) -> ProductionTokenizer:
    """A tokenizer file of the user's own: no pinned hash (its hash is recorded)."""
    path_part, _, base = spec.partition("@")
    path = Path(path_part)
    build: Callable[[], formats.Encoder]
    if path.suffix == ".tiktoken":
        base = base or path.stem
        if base not in _openai_encodings():
            raise TokenizerError(f"{spec}: say which encoding the rank file follows (for its split "
                                 f"pattern and special tokens), e.g. {path_part}@cl100k_base")
        data = _read(path)
        formats.rank_file(data, str(path))  # a bad line is said with this file's name and line
        build = lambda: formats.openai_encoding(base, {path.name: data}, None)  # noqa: E731
    elif path.suffix == ".json":
        data = _read(path)
        build = lambda: formats.tokenizer_json(data, str(path))  # noqa: E731
    elif path.suffix == ".model":
        data = _read(path)
        build = lambda: formats.sentencepiece_model(data, str(path))  # noqa: E731
    elif _exists(path):
        raise TokenizerError(f"{spec}: not a tokenizer this knows (.tiktoken, tokenizer.json, "
                             "SentencePiece .model); for a catalog format, name its entry: "
                             "NAME=FILE")
    else:
        raise unknown_tokenizer(spec)
    sha = digest(data)
    return _built(ProductionTokenizer(path.name, f"{path} (given; SHA-256 {sha})",
                                      (str(path.resolve()), base, sha), len(data), build))


def _built(tokenizer: ProductionTokenizer) -> ProductionTokenizer:
    """A tokenizer of a file whose content no catalog pins, its encoder built now: a file
    its library refuses is refused as it is resolved (a run's settings check), not when the
    run counts."""
    tokenizer.encoder  # noqa: B018 - built (or refused) here, kept for its first use
    return tokenizer


def _read(path: Path) -> bytes:
    try:
        folder, file = path.is_dir(), path.is_file()
    except (OSError, ValueError) as error:  # a name too long for a path, or with a NUL
        shown = str(path) if len(str(path)) <= 80 else str(path)[:79] + "…"
        raise TokenizerError(f"{shown}: not a file name this system takes "
                             f"({getattr(error, 'strerror', None) or error})") from None
    if folder:
        raise TokenizerError(f"{path} is a folder; name the tokenizer's file in it")
    if not file:
        raise TokenizerError(f"{path}: no such file")
    try:
        return path.read_bytes()
    except OSError as error:
        raise TokenizerError(f"{path}: cannot read ({error.strerror})") from None


def _openai_encodings() -> set[str]:
    return {e.encoding for e in catalog().values() if e.format is Format.TIKTOKEN and e.encoding}


def _sources(found: dict[str, Found]) -> str:
    return "; ".join(f"{name}: {f.where}" for name, f in found.items())


@dataclass(frozen=True)
class Availability:
    """Where a catalog entry's files are on this machine, or why they are not."""

    entry: CatalogEntry
    sources: dict[str, Found]
    """File name -> the copy it resolves to (only when every file resolves)."""
    missing: str | None
    """Why not, with what was tried; None when available."""
    refused: list[str]
    """Copies found but refused (wrong hash), even when another copy was accepted."""
    library_missing: bool = False
    """The files may be here, but the library that counts with them is not installed."""

    @property
    def available(self) -> bool:
        return self.missing is None

    @property
    def origin(self) -> str:
        """Where it resolves from, in a few words; or that it does not."""
        if not self.available:
            return "missing"
        return ", ".join(dict.fromkeys(found.origin for found in self.sources.values()))

    @property
    def command(self) -> str | None:
        """What makes it available, when it is not."""
        if self.available:
            return None
        if self.library_missing:
            return formats.EXTRA
        return f"analyzer tokenizers get {self.entry.name}"

    def document(self) -> dict:
        """The entry and where it resolves, as `analyzer tokenizers --json` prints it."""
        item = self.entry
        return {
            "name": item.name, "family": item.family, "models": item.models,
            "format": item.format.value, "library": item.library, "vocab_size": item.vocab_size,
            "notes": item.notes, "caveat": item.caveat,
            "framing": item.framing.model_dump(mode="json") if item.framing else None,
            "files": [{"name": f.name, "sha256": f.sha256, "sources": f.sources()}
                      for f in item.files],
            "available": self.available,
            "resolves_from": {name: found.where for name, found in self.sources.items()},
            "missing": self.missing, "refused": self.refused, "command": self.command,
        }


def availability(item: CatalogEntry) -> Availability:
    """Look for an entry's files on this machine only (hashes verified, nothing loaded)."""
    locator = Locator(item, downloads=False)
    if importlib.util.find_spec(item.library) is None:
        return Availability(item, {}, f"needs {item.library}: {formats.EXTRA}", [], True)
    sources = {}
    try:
        for file in item.files:
            sources[file.name] = replace(locator.find(file), data=b"")  # where, not what
    except TokenizerError as error:
        return Availability(item, {}, str(error), locator.refused)
    return Availability(item, sources, None, locator.refused)


def available_tokenizers() -> tuple[list[str], dict[str, str]]:
    """(catalog names whose files are on this machine, {other name: why not})."""
    names, skipped = [], {}
    for item in catalog().values():
        status = availability(item)
        if status.available:
            names.append(item.name)
        else:
            skipped[item.name] = (status.missing or "") if status.library_missing \
                else f"not on this machine ({status.command})"
    return names, skipped


def expand_all_available(specs: list[str]) -> tuple[list[str], dict[str, str]]:
    """The specs with `all-available` made into the catalog names available on this machine
    (without repeats), and {catalog name left out: why}; TokenizerError when none is."""
    if ALL_AVAILABLE not in specs:
        return specs, {}
    names, skipped = available_tokenizers()
    if not names:
        raise TokenizerError(f"{ALL_AVAILABLE}: no catalog tokenizer is on this machine; "
                             "see analyzer tokenizers")
    at = specs.index(ALL_AVAILABLE)
    return list(dict.fromkeys(specs[:at] + names + specs[at + 1:])), skipped
