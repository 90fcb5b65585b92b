"""A corpus in a zip archive: unpacked, checked, into a folder that the other readers read.

A zip holds the corpus as a folder would (a file per language, FLORES's dev/ and devtest/, one
.tsv), at its top or inside one folder. Unpacking refuses what could write outside the folder
or fill the disk: absolute or `..` names, links, encrypted entries, more than `MAX_ENTRIES`
entries, and more than `limit` bytes unpacked (`DEFAULT_UNPACK_LIMIT`, for `analyzer ingest` and
uploads alike), counted as they are written (an entry's declared size is not trusted); what
would be read wrong: two entries of one name (the last would win without a word); and what
cannot be unpacked here: a name that is both a file and a folder, a name longer than the
system allows. Every message names the archive and the entry, never the temporary folder.

>>> import io, zipfile, tempfile
>>> data = io.BytesIO()
>>> with zipfile.ZipFile(data, "w") as archive:
...     archive.writestr("tiny/eng_Latn.txt", "Hello\\n")
>>> with tempfile.TemporaryDirectory() as folder:
...     root = unpack_zip(data, Path(folder), name="tiny.zip")
...     sorted(p.name for p in root.iterdir())
['eng_Latn.txt']
"""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO

from .errors import CorpusError

MAX_ENTRIES = 10_000
"""Entries a corpus archive may hold (a corpus of a thousand languages has a thousand files)."""
DEFAULT_UNPACK_LIMIT = 100_000_000
"""Bytes a corpus archive may unpack to, unless its reader is given another limit (`ingest
--max-corpus-bytes`, `serve --max-corpus-bytes`): a 300 KB zip can hold gigabytes of zeros."""
IGNORED = ("__MACOSX", ".DS_Store")
"""What archivers add beside the content (macOS's resource forks), skipped."""


def is_zip(path: Path) -> bool:
    """Whether `path` is a regular file that is a zip archive (by its content, not its name)."""
    return path.is_file() and zipfile.is_zipfile(path)


def unpack_zip(source: Path | IO[bytes], into: Path, *, name: str,
               limit: int = DEFAULT_UNPACK_LIMIT) -> Path:
    """Unpack the archive `source` (shown as `name` in messages) into the empty folder `into`;
    the corpus's folder: the archive's single top folder, or `into` itself. CorpusError for an
    archive that is not one, or that holds what a corpus never does."""
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as error:
        raise CorpusError(f"{name}: not a readable zip archive ({error})", file=name) from None
    with archive:
        entries = [entry for entry in archive.infolist()
                   if not any(part in IGNORED for part in PurePosixPath(entry.filename).parts)]
        if len(entries) > MAX_ENTRIES:
            raise CorpusError(f"{name} holds {len(entries):,} entries; a corpus archive holds at "
                              f"most {MAX_ENTRIES:,}", file=name, value=len(entries))
        names = _checked_names(entries, into, name)
        written = 0
        for entry, inside in zip(entries, names, strict=True):
            target = into / inside
            try:
                if entry.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(entry) as reading, open(target, "wb") as writing:
                    while block := reading.read(1 << 20):
                        written += len(block)
                        if written > limit:
                            raise CorpusError(
                                f"{name} unpacks to more than {limit:,} bytes, the most taken "
                                "for a corpus (--max-corpus-bytes sets it); nothing was stored",
                                file=name, value=limit)
                        writing.write(block)
            except OSError as error:  # said without the temporary folder's path
                raise CorpusError(f"{name}: the entry {entry.filename} cannot be unpacked "
                                  f"({error.strerror or type(error).__name__})", file=name,
                                  value=entry.filename) from None
            except (zipfile.BadZipFile, EOFError, RuntimeError, NotImplementedError) as error:
                raise CorpusError(f"{name}: the entry {entry.filename} cannot be unpacked "
                                  f"({error})", file=name, value=entry.filename) from None
    return _corpus_folder(into, name)


def _checked_names(entries: list[zipfile.ZipInfo], into: Path, name: str
                   ) -> list[PurePosixPath]:
    """Each entry's path inside the folder, every name checked before anything is written:
    CorpusError naming the archive and the entry for one that would leave the folder
    (`_safe_name`), one given twice, one that is a file where another entry needs a folder
    (`d/eng.txt` and `d/eng.txt/fra.txt`), and one longer than this system allows."""
    names = [_safe_name(entry, name) for entry in entries]
    files: dict[PurePosixPath, str] = {}
    for entry, inside in zip(entries, names, strict=True):
        if entry.is_dir():
            continue
        if inside in files:
            raise CorpusError(f"{name}: {inside} is in the archive twice; one of them would be "
                              "read and the other dropped without a word. Give an archive "
                              "with each file once", file=name, value=str(inside))
        files[inside] = entry.filename
    for entry, inside in zip(entries, names, strict=True):
        for folder in inside.parents if not entry.is_dir() else [inside, *inside.parents]:
            if folder in files:
                raise CorpusError(f"{name}: {files[folder]} is a file, and the entry "
                                  f"{entry.filename} is inside it as in a folder; one name "
                                  "cannot be both. Give an archive whose names are a folder's",
                                  file=name, value=entry.filename)
    longest_part, longest_path = _name_limits(into)
    for entry, inside in zip(entries, names, strict=True):
        part = max(inside.parts, key=lambda piece: len(os.fsencode(piece)))
        if len(os.fsencode(part)) > longest_part:
            raise CorpusError(f"{name}: the entry {_shortened(entry.filename)} has a name "
                              f"longer than this system allows ({len(os.fsencode(part)):,} "
                              f"bytes, at most {longest_part:,})", file=name,
                              value=entry.filename)
        if len(os.fsencode(into / inside)) >= longest_path:
            raise CorpusError(f"{name}: the entry {_shortened(entry.filename)} has a path longer "
                              f"than this system allows ({len(os.fsencode(str(inside))):,} "
                              "bytes)", file=name, value=entry.filename)
    return names


def _shortened(text: str, most: int = 80) -> str:
    """A name of at most `most` characters: a longer one's start and end, "..." between.

    >>> _shortened("d/" + "x" * 300 + ".txt", 20)
    'd/xxxxxxxxx...xx.txt'
    """
    if len(text) <= most:
        return text
    start = (most - 3) * 2 // 3
    return f"{text[:start]}...{text[start - most + 3:]}"


def _name_limits(folder: Path) -> tuple[int, int]:
    """The longest name of a file, and of a path, the file system of `folder` takes (bytes)."""
    limits = []
    for key, usual in (("PC_NAME_MAX", 255), ("PC_PATH_MAX", 4096)):
        try:
            limits.append(os.pathconf(folder, key))
        except (OSError, ValueError):  # a system that does not say
            limits.append(usual)
    return limits[0], limits[1]


def _safe_name(entry: zipfile.ZipInfo, name: str) -> PurePosixPath:
    """The entry's path inside the folder; CorpusError for one that would leave it, a link, or
    an encrypted entry."""
    path = PurePosixPath(entry.filename.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or not path.parts or ":" in path.parts[0]:
        raise CorpusError(f"{name}: the entry {entry.filename!r} would be written outside the "
                          "archive's folder; a corpus archive holds relative names only",
                          file=name, value=entry.filename)
    mode = entry.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise CorpusError(f"{name}: {entry.filename} is a symbolic link; a corpus archive holds "
                          "regular files only", file=name, value=entry.filename)
    if entry.flag_bits & 0x1:
        raise CorpusError(f"{name}: {entry.filename} is encrypted; give an archive without a "
                          "password", file=name, value=entry.filename)
    return path


def _corpus_folder(into: Path, name: str) -> Path:
    """The folder the corpus is in: a lone top folder (what zipping a folder makes), else the
    top itself."""
    top = [item for item in into.iterdir() if item.name not in IGNORED]
    if len(top) == 1 and top[0].is_dir():
        return top[0]
    if not top:
        raise CorpusError(f"{name}: the archive holds no files", file=name)
    return into
