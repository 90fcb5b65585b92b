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

import hashlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from importlib import metadata
from pathlib import Path

from analyzer.bpe.native_split import available as native_split_available
from analyzer.bpe.ranked import CompiledRanked
from analyzer.bpe.words import Spellings
from analyzer.errors import did_you_mean
from analyzer.hub import HUB_PREFIX, hub_failure, offline_reason

from . import formats, kept_engines, loaded
from .catalog import CatalogEntry, Format, catalog, entry, unknown_tokenizer
from .engine_count import EngineCounter
from .engine_models import EngineTokenizer, words_text_of
from .errors import TokenizerError
from .kept import kept_json
from .local_store import digest
from .locate import Found, Locator, check_hub_name, hf_cached, hf_download, hf_offline
from .vocabulary import jaccard, script_composition

HF_PREFIX = HUB_PREFIX
SCRIPTS_FORMAT = 1
"""Of the kept scripts of a vocabulary: a new one when `script_composition` changes."""
ALL_AVAILABLE = "all-available"


class ProductionTokenizer:
    """A production tokenizer, ready to count: its files found and verified when it is
    resolved; what counts it made when it is first used, once per process
    (`analyzer.external.loaded`), so that a run's settings are checked without loading any (a
    catalog tokenizer: its files are the pinned ones; a file or a hub repository's, built as
    it is resolved, so that a bad one is refused then). What is made is its engine model
    where the analyzer's engine counts it (kept between runs, `kept_engines`: its library
    then loaded only when a text needs it), else its library's encoder.

    `name`, `source` (where each file came from, with its SHA-256), `entry` (the catalog
    entry, when it is one) and `digest` (the SHA-256 of its files, of their hashes for
    several: what it is, whatever its name) are known at once; the rest is the encoder's:
    `count` (tokens of each text: the text's own, special-token text as plain text, no
    BOS/EOS), `size`, `library` (the library and its version), `pieces` (a text's tokens as
    (id, bytes), for showing them), `specials` (the special tokens its library adds to each
    text: a tokenizer.json's BOS/EOS), `tokens` (its vocabulary's ordinary tokens as bytes),
    `engine` (how the analyzer's engine counts it as its library does, or why it cannot),
    `words_text`, `ids_batch` and `spellings` (`formats.Encoder`'s)."""

    def __init__(self, name: str, source: str, key: tuple, size: int,
                 build: Callable[[], Loaded], entry: CatalogEntry | None = None,
                 digest: str = ""):
        self.name = name
        self.source = source
        self.entry = entry
        self.digest = digest
        self._key, self._bytes, self._build = key, size, build

    @property
    def _loaded(self) -> Loaded:
        """What counts it, made once per process (`analyzer.external.loaded`)."""
        return loaded.encoder(self._key, self._bytes, self._build)

    @property
    def encoder(self) -> formats.Encoder:
        return self._loaded.encoder

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

    @property
    def engine(self) -> EngineTokenizer | str:
        return self.encoder.engine

    @property
    def words_text(self) -> Callable[[str], str] | None:
        return self.encoder.words_text

    @property
    def ids_batch(self) -> Callable[[list[str]], list[list[int]]] | None:
        return self.encoder.ids_batch

    @property
    def spellings(self) -> Callable[[], list[bytes]] | None:
        return self.encoder.spellings

    @property
    def counter(self) -> EngineCounter | None:
        """Its counter on the analyzer's compiled engine, or None: its library counts it (the
        engine cannot equal it, or is not built here, or turned off: ANALYZER_ENGINE=python)."""
        return self._loaded.counter if native_split_available() else None

    def __repr__(self) -> str:
        return f"ProductionTokenizer({self.name!r})"

    @property
    def counted_by(self) -> str:
        """Which engine counts it: "analyzer" (the analyzer's own, equal to its library), or
        its library's name."""
        return "analyzer" if self.counter is not None else self.library.split(" ")[0]

    def why_library(self) -> str | None:
        """Why its library counts it, in a few words; None when the engine does."""
        if self.counter is not None:
            return None
        if isinstance(self.engine, str):
            return self.engine
        return "the compiled engine is not built here (or ANALYZER_ENGINE=python)"

    def scripts(self) -> dict[str, int] | None:
        """How many of its vocabulary's tokens each script has (`script_composition`), worked
        out once per tokenizer file (kept under its SHA-256); None without its tokens."""
        tokens = self.tokens
        if tokens is None:
            return None
        if not self.digest:
            return script_composition(tokens())
        return kept_json("scripts", f"{self.digest}-{SCRIPTS_FORMAT}.json",
                         lambda: script_composition(tokens()),
                         lambda found: all(isinstance(name, str) and type(n) is int
                                           for name, n in found.items()))

    @cached_property
    def has_tokens(self) -> bool:
        """Whether its vocabulary's tokens can be listed. Asked once: a run compares each
        tokenizer with every other, and a process keeps fewer encoders loaded than a run of
        every tokenizer has (asking each time built 76 encoders again for 105 pairs: 5 s)."""
        return self.tokens is not None

    @cached_property
    def _token_set(self) -> set[bytes]:
        assert self.tokens is not None
        return set(self.tokens())

    def overlap(self, other: ProductionTokenizer) -> tuple[int, int] | None:
        """(tokens both vocabularies have, tokens either has): their Jaccard index is the first
        over the second (`vocabulary.jaccard`); kept per pair of tokenizer files. None when
        either has no tokens to compare."""
        if not (self.has_tokens and other.has_tokens):
            return None
        if not (self.digest and other.digest):
            return jaccard(self._token_set, other._token_set)
        first, second = sorted((self, other), key=lambda tokenizer: tokenizer.digest)
        found = kept_json("overlaps", f"{first.digest}-{second.digest}.json", lambda: dict(
            zip(("both", "either"), jaccard(first._token_set, second._token_set))),
            lambda found: all(type(found.get(key)) is int for key in ("both", "either")))
        return found["both"], found["either"]

    def measure(self, texts: list[str], words: bool = True) -> tuple[list[int], list[int | None]]:
        """Each text's tokens and, with `words`, how many of its words they split (None where
        not known), in one pass: the engine's, or the library's count and its pieces."""
        if self.counter is not None:
            return self.counter.count(texts, words)
        if self.ids_batch is None:
            return self.count(texts), [None] * len(texts)
        ids = self.ids_batch(texts)
        counts = [len(found) for found in ids]
        spellings = self._loaded.spellings
        if not words or spellings is None:
            return counts, [None] * len(texts)
        spelled = self.words_text or (lambda text: text)
        return counts, spellings.split_words([spelled(text) for text in texts], ids)


class Loaded:
    """What a process keeps of a tokenizer (`analyzer.external.loaded`): its encoder, and
    what is made from it when first asked for: its engine's counter, its ids' spellings.
    `built` is called with its engine model once compiled (to keep it for the next run)."""

    def __init__(self, encoder: formats.Encoder,
                 built: Callable[[CompiledRanked], None] | None = None):
        self.encoder = encoder
        self._built = built

    @cached_property
    def counter(self) -> EngineCounter | None:
        """Its counter on the engine (made once per process), or None: the engine cannot
        equal its library (`ProductionTokenizer.counter` asks whether the engine is built)."""
        engine = self.encoder.engine
        if isinstance(engine, str):
            return None
        encoder = self.encoder
        # the library's count and pieces asked for only when a text needs them: an encoder
        # made from a kept engine model loads its library then
        return EngineCounter(engine, lambda texts: encoder.count(texts),
                             None if encoder.pieces is None else lambda text: encoder.pieces(text),
                             self._built)

    @cached_property
    def spellings(self) -> Spellings | None:
        spellings = self.encoder.spellings
        return Spellings(spellings()) if spellings is not None else None


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
    files = {name: f.data for name, f in found.items()}
    files_digest = _digest([files[file.name] for file in item.files])
    library = _installed(item.library)

    def from_library() -> formats.Encoder:
        encoder = formats.build(item, files, item.name)
        if encoder.size != item.vocab_size:
            raise TokenizerError(f"{item.name}: {encoder.library} gives {encoder.size:,} tokens, "
                                 f"the catalog {item.vocab_size:,}: the catalog or the library "
                                 "is wrong")
        return encoder

    def build() -> Loaded:  # on first use: the files are the pinned ones
        kept = kept_engines.load(files_digest, library) \
            if library and item.on_engine and native_split_available() else None
        if kept is not None:  # its engine model as kept: its library only if a text needs it
            return Loaded(_from_kept(kept, from_library))
        encoder = from_library()

        def built(compiled: CompiledRanked) -> None:  # kept for the next load
            if isinstance(encoder.engine, EngineTokenizer) and encoder.library == library:
                kept_engines.store(files_digest, encoder.library, encoder.size, encoder.specials,
                                   encoder.engine, compiled.packed(),
                                   encoder.tokens() if encoder.tokens else None)

        return Loaded(encoder, built)

    if library is None:
        from_library()  # refused now, as its library refuses: it is not there
    return ProductionTokenizer(item.name, _sources(found),  # the entry whole: its files' hashes
                               (item.name, item.model_dump_json()),  # and how they are read
                               sum(len(data) for data in files.values()), build, item,
                               files_digest)


def _installed(library: str) -> str | None:
    """The library and its installed version, as an encoder names it ("tiktoken 0.14.0"); None
    when it cannot be imported (the engine counts as it does, and never without it)."""
    try:
        if importlib.util.find_spec(library) is None:
            return None
        return f"{library} {metadata.version(library)}"
    except (metadata.PackageNotFoundError, ValueError):  # ValueError: blocked in sys.modules
        return None


def _from_kept(kept: kept_engines.KeptTokenizer,
               make: Callable[[], formats.Encoder]) -> formats.Encoder:
    """An encoder of a kept engine model: its size, specials, tokens and engine as kept, its
    library's encoder made the first time a text needs it (`make`)."""
    library: list[formats.Encoder] = []

    def encoder() -> formats.Encoder:
        if not library:
            library.append(make())
        return library[0]

    def ids_batch(texts: list[str]) -> list[list[int]]:
        batch = encoder().ids_batch
        assert batch is not None
        return batch(texts)

    def spellings() -> list[bytes]:
        spelled = encoder().spellings
        assert spelled is not None
        return spelled()

    def pieces(text: str) -> list[tuple[int, bytes]]:
        shown = encoder().pieces
        assert shown is not None
        return shown(text)

    tokens = kept.tokens
    engine = kept.engine
    return formats.Encoder(lambda texts: encoder().count(texts), kept.size, kept.library, pieces,
                           kept.specials, (lambda: tokens) if tokens is not None else None,
                           ids_batch=ids_batch, spellings=spellings,
                           words_text=words_text_of(engine.normalizer), make_engine=lambda: engine)


def catalog_files(item: CatalogEntry, explicit: Path | None = None,
                  downloads: bool = True) -> dict[str, Found]:
    """An entry's files, each found and verified (TokenizerError says what was tried)."""
    locator = Locator(item, explicit, downloads)
    return {file.name: locator.find(file) for file in item.files}


def from_hugging_face(spec: str, downloads: bool = True) -> ProductionTokenizer:
    """`hf:ORG/NAME[@REVISION]`: its tokenizer.json, unpinned (its hash is recorded)."""
    data, where = hugging_face_file(spec, downloads)
    return _built(ProductionTokenizer(spec, where, (spec, digest(data)), len(data),
                                      lambda: Loaded(formats.tokenizer_json(data, spec)),
                                      digest=_digest([data])))


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
                                      (str(path.resolve()), base, sha), len(data),
                                      lambda: Loaded(build()), digest=sha))


def _built(tokenizer: ProductionTokenizer) -> ProductionTokenizer:
    """A tokenizer of a file whose content no catalog pins, its encoder built now: a file
    its library refuses is refused as it is resolved (a run's settings check), not when the
    run counts."""
    tokenizer.encoder  # noqa: B018 - built (or refused) here, kept for its first use
    return tokenizer


def _digest(files: list[bytes]) -> str:
    """A tokenizer's files' SHA-256 (one file's own; of several, that of their hashes)."""
    if len(files) == 1:
        return digest(files[0])
    return hashlib.sha256("".join(digest(data) for data in files).encode()).hexdigest()


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
    def counted_by(self) -> str:
        """What counts it: "analyzer" (the analyzer's engine, equal to its library) or the
        library's name."""
        return "analyzer" if self.entry.on_engine and native_split_available() else self.entry.library

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
            "models_note": item.models_note,
            "models_date": item.models_date.isoformat() if item.models_date else None,
            "models_source": item.models_source,
            "format": item.format.value, "library": item.library, "vocab_size": item.vocab_size,
            "notes": item.notes, "caveat": item.caveat,
            "framing": item.framing.model_dump(mode="json") if item.framing else None,
            "files": [{"name": f.name, "sha256": f.sha256, "sources": f.sources()}
                      for f in item.files],
            "available": self.available, "counted_by": self.counted_by,
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
