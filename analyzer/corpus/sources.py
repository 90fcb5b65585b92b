"""Training sources: monolingual text per language, found where it lies and counted once,
never copied (the database keeps each file's path, size, time and SHA-256, and its bytes and
documents).

Layouts, for each path given:

- a file named `<lang>.<ext>` (`fra_Latn.txt`, `fra.jsonl.zst`);
- a folder of such files;
- a folder of `<lang>/` folders, each holding that language's shards, at any depth (how web
  corpora such as FineWeb-2 and CulturaX ship: `fra_Latn/train/000_00000.parquet`).

Each file is read by `analyzer.corpus.streams` (plain text, JSON Lines or Parquet, compressed or
not, told by content). Language codes are normalised as `ingest` normalises them; a folder
naming one language in two ways (`eng.txt` and `en.txt`) is refused, naming both. Hidden files
and documentation (README, LICENSE, ...) are passed over; any other file whose name is not a
language is refused, named.

    files = find_source_files([Path("fineweb2/data")])
    scanned = scan_files(files, documents="lines")
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from analyzer.files import not_regular

from .errors import CorpusError
from .files import path_text, undecodable_byte
from .languages import normalise_language
from .readers import COMPANION_FILES
from .streams import DEFAULT_TEXT_FIELD, FileKind, StreamError, file_kind, read_documents

HASH_BLOCK = 4 << 20


@dataclass
class SourceFile:
    """One file of a source, as found, and (once scanned) what it holds."""

    lang: str
    path: Path
    """Absolute."""
    size: int
    mtime_ns: int
    kind: FileKind
    sha256: str = ""
    bytes: int = 0
    """UTF-8 bytes of its documents."""
    documents: int = 0
    invalid_documents: int = 0
    invalid_bytes: int = 0
    problem: str | None = None
    """The first thing that could not be read in it (documents or a broken stream after them,
    skipped while scanning), in words; None when all of it was read."""


@dataclass
class ScannedSource:
    """A source's files, scanned, and its fingerprint (of every file's language, path, size and
    SHA-256)."""

    files: list[SourceFile]
    fingerprint: str
    languages: dict[str, tuple[int, int]] = field(default_factory=dict)
    """`{lang: (bytes, documents)}`, in the order the languages were found."""


def language_of(name: str) -> str | None:
    """The language a file's or folder's name stands for (the part before its first dot), or
    None when it is none.

    >>> language_of("fra_Latn.jsonl.zst"), language_of("fra"), language_of("000_00000.parquet")
    ('fra_Latn', 'fra_Latn', None)
    """
    stem = name.split(".")[0]
    if not stem:
        return None
    try:
        return normalise_language(stem)
    except CorpusError:
        return None


def passed_over(name: str) -> bool:
    return name.startswith(".") or name.split(".")[0].lower() in COMPANION_FILES


def find_source_files(paths: Iterable[Path], format: str | None = None) -> list[SourceFile]:
    """Every file of the source, by language in the order found, each language's files in path
    order; CorpusError naming what does not fit a layout."""
    found: list[SourceFile] = []
    for given in paths:
        path = Path(given)
        if not path.is_dir() and (why := not_regular(path)) is not None:
            raise CorpusError(f"{path} is {why}, not a file or folder of text; a source is "
                              "regular files", file=str(path))
        if path.is_file():
            lang = language_of(path.name)
            if lang is None:
                raise CorpusError(f"{path}: its name is not a language (name it <lang>.<ext>, "
                                  "e.g. fra_Latn.txt.gz)", file=str(path))
            found.append(source_file(lang, path, format))
            continue
        named: dict[str, Path] = {}  # each language's first entry in this folder
        for entry in sorted(path.iterdir(), key=lambda entry: entry.name):
            if passed_over(entry.name):
                continue
            lang = language_of(entry.name)
            if lang is None:
                raise CorpusError(f"{entry}: its name is not a language; a source folder holds "
                                  "<lang>.<ext> files or <lang>/ folders of shards",
                                  file=str(entry))
            first = named.setdefault(lang, entry)
            if first.name.split(".")[0] != entry.name.split(".")[0]:
                raise CorpusError(f"{first} and {entry} are both {lang}: one language under two "
                                  "names, which would be taken as one without a word. Keep one, "
                                  f"or give the language's files one name ({lang}.<ext> files, or "
                                  f"one {lang}/ folder of shards)", file=str(entry), language=lang)
            if entry.is_dir():
                shards = sorted((file for file in entry.rglob("*") if file.is_file()
                                 and not any(passed_over(part) for part in
                                             file.relative_to(entry).parts)),
                                key=lambda file: str(file.relative_to(entry)))
                if not shards:
                    raise CorpusError(f"{entry}: a language folder with no files", file=str(entry))
                found += [source_file(lang, shard, format) for shard in shards]
            else:
                found.append(source_file(lang, entry, format))
    seen: dict[Path, str] = {}
    for item in found:
        if item.path in seen:
            raise CorpusError(f"{item.path} is given twice", file=str(item.path))
        seen[item.path] = item.lang
    if not found:
        raise CorpusError("no files in the paths given")
    order = list(dict.fromkeys(item.lang for item in found))
    return sorted(found, key=lambda item: order.index(item.lang))  # stable: path order kept


def source_file(lang: str, path: Path, format: str | None, *, resolve: bool = True
                ) -> SourceFile:
    """One file of a source, as it is now; CorpusError when it is not a regular file or cannot
    be read. `resolve=False` keeps the path given (absolute) rather than where its links lead:
    the Hugging Face cache's snapshot names a shard, its link a blob named by a hash."""
    why = not_regular(path)  # before anything opens it: a pipe or a device would never end
    if why is not None:
        raise CorpusError(f"{path} is {why}, not a regular file; a source holds only regular "
                          "files", file=str(path))
    resolved = path.resolve() if resolve else path.absolute()
    byte = undecodable_byte(resolved)
    if byte is not None:  # its path is kept as text, to read it again by
        raise CorpusError(f"{path_text(resolved)}: its path is not UTF-8 (the byte 0x{byte:02x}), "
                          "and a source keeps its files' paths as text; rename it",
                          file=path_text(path))
    try:
        status = os.stat(resolved)
    except OSError as error:
        raise CorpusError(f"{path}: cannot read ({error.strerror})", file=str(path)) from None
    return SourceFile(lang, resolved, status.st_size, status.st_mtime_ns, file_kind(resolved, format))


Progress = Callable[[int], None]
"""Called with how many more of the files' bytes (on disk) were read."""


def scan_files(files: list[SourceFile], *, documents: str = "lines",
               text_field: str = DEFAULT_TEXT_FIELD, progress: Progress | None = None
               ) -> ScannedSource:
    """Read every file once: its SHA-256, its documents and their bytes (documents that cannot
    be read are skipped and counted, the first named in `problem`)."""
    for item in files:
        digest = hashlib.sha256()
        try:
            with item.path.open("rb") as file:
                while block := file.read(HASH_BLOCK):
                    digest.update(block)
                    if progress:
                        progress(len(block) // 2)  # the hash is half the work, the reading half
        except OSError as error:
            raise CorpusError(f"{item.path}: cannot read ({error.strerror})",
                              file=str(item.path)) from None
        item.sha256 = digest.hexdigest()
        item.bytes = item.documents = item.invalid_documents = item.invalid_bytes = 0
        item.problem = None
        for batch in read_documents(item.path, item.kind, documents=documents,
                                    text_field=text_field, skip_invalid=True):
            item.documents += len(batch.texts)
            item.bytes += batch.n_bytes
            item.invalid_documents += batch.skipped_documents
            item.invalid_bytes += batch.skipped_bytes
            if item.problem is None and (batch.skipped_documents or batch.notes):
                item.problem = batch.notes[0] if batch.notes else _first_problem(
                    item, documents, text_field)
        if progress:
            progress(item.size - item.size // 2)
    _refuse_languages_without_text(files)
    return ScannedSource(files, fingerprint(files), languages(files))


def _refuse_languages_without_text(files: list[SourceFile]) -> None:
    """CorpusError naming each language whose files hold no text (empty, blank lines, a Parquet
    file of no rows, nothing but unreadable documents): a run would train it on nothing."""
    text: dict[str, int] = {}
    for item in files:
        text[item.lang] = text.get(item.lang, 0) + item.bytes
    empty = sorted(lang for lang, n in text.items() if n == 0)
    if empty:
        named = "; ".join(f"{lang} ({', '.join(str(i.path) for i in files if i.lang == lang)})"
                          for lang in empty)
        raise CorpusError(f"no text to train on for {named}: its files are empty, blank or "
                          "unreadable; remove the language's files or give ones with text",
                          language=empty[0])


def _first_problem(item: SourceFile, documents: str, text_field: str) -> str:
    """What the strict reader says of the file's first unreadable document."""
    try:
        for _ in read_documents(item.path, item.kind, documents=documents, text_field=text_field):
            pass
    except StreamError as error:
        return str(error)
    return f"{item.path}: a document could not be read"


def fingerprint(files: list[SourceFile]) -> str:
    """SHA-256 of every file's language, path, size and content's SHA-256."""
    digest = hashlib.sha256(b"analyzer source 1\n")
    for item in files:
        digest.update(f"{item.lang}\0{item.path}\0{item.size}\0{item.sha256}\n".encode())
    return digest.hexdigest()


def languages(files: list[SourceFile]) -> dict[str, tuple[int, int]]:
    """`{lang: (bytes, documents)}` over the files."""
    found: dict[str, tuple[int, int]] = {}
    for item in files:
        n_bytes, n_documents = found.get(item.lang, (0, 0))
        found[item.lang] = (n_bytes + item.bytes, n_documents + item.documents)
    return found
