"""From raw columns to a checked, normalised `ParallelCorpus`, and format detection."""

from __future__ import annotations

import hashlib
import os
import tempfile
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from analyzer.errors import SETTING, AnalyzerError, setting
from analyzer.files import is_special, not_regular
from analyzer.settings import MAX_LANGUAGES

from .archives import DEFAULT_UNPACK_LIMIT, is_zip, unpack_zip
from .choices import FORMATS, UNIT_KINDS
from .columnar import read_parquet
from .errors import CorpusError
from .files import path_text
from .flores import DEFAULT_SPLIT, flores_files, flores_plus_files, read_flores
from .hub import hub_dataset, is_hub_spec
from .languages import normalise_language
from .readers import RawCorpus, language_files, read_folder, read_jsonl, read_moses, read_table
from .tmx import read_tmx


@dataclass
class ParallelCorpus:
    """Aligned texts: `texts[language][i]` is unit i in that language, for every language."""

    texts: dict[str, list[str]]
    format: str
    source: str
    unit_ids: list[str | None] = field(default_factory=list)
    dropped_empty_units: int = 0
    nfc_changed_units: int = 0
    nfc: bool = False
    not_read: list[str] = field(default_factory=list)
    """Files beside the corpus's that were not read (a folder's other files)."""
    notes: list[str] = field(default_factory=list)
    """What else the reader left or changed, in words, for the user (`RawCorpus.notes`)."""

    @property
    def languages(self) -> list[str]:
        return list(self.texts)

    @property
    def n_units(self) -> int:
        return len(next(iter(self.texts.values()), []))

    def content_hash(self) -> str:
        """The corpus's content digest (`content_digest`)."""
        return content_digest(self.texts, self.unit_ids)


def content_digest(texts: dict[str, list[str]], unit_ids: list[str | None]) -> str:
    """SHA-256 of a corpus's languages, texts and unit ids: the same content gives the same
    digest whatever the format or the order of the languages, and different content a
    different one. Every piece is written with its length first, so no text (one holding a NUL,
    say) can pass for two, nor two for one.

    >>> content_digest({"eng": ["a\\x00b", "c"]}, []) == content_digest({"eng": ["a", "b\\x00c"]}, [])
    False
    """
    digest = hashlib.sha256(b"analyzer corpus digest 2\n")

    def put(data: bytes) -> None:
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)

    put(str(len(texts)).encode())
    for language in sorted(texts):
        put(language.encode("utf-8"))
        put(str(len(texts[language])).encode())
        for text in texts[language]:
            put(text.encode("utf-8", errors="surrogatepass"))
    named = [unit_id for unit_id in unit_ids if unit_id is not None]
    if named:  # ids count once any unit has one (a format that has none gives none)
        put(str(len(unit_ids)).encode())
        for unit_id in unit_ids:
            put(b"\xff" if unit_id is None else b"=" + unit_id.encode("utf-8", errors="surrogatepass"))
    return digest.hexdigest()


def read_corpus(path: Path | str, *, format: str | None = None, units: str = "lines",
                nfc: bool = False, skip_empty_units: bool = False,
                split: str | None = None,
                unpack_limit: int = DEFAULT_UNPACK_LIMIT) -> ParallelCorpus:
    """Read, check and normalise a parallel corpus in any supported format (`split`: FLORES's
    dev, devtest or dev+devtest; default devtest), from a path, a zip archive of one (unpacked
    to at most `unpack_limit` bytes, `analyzer.corpus.archives`) or the Hugging Face hub
    (`hf:ORG/NAME[@REVISION]`, `analyzer.corpus.hub`).

    Raises CorpusError with a message naming the file, line or value at fault.
    """
    if is_hub_spec(path):  # a dataset on the hub: its split's files, then read as a folder
        folder, source = hub_dataset(str(path), (split or DEFAULT_SPLIT).split("+"))
        return _read_corpus(folder, source, format=format, units=units, nfc=nfc,
                            skip_empty_units=skip_empty_units, split=split)
    return _read_corpus(Path(path), path_text(path), format=format, units=units, nfc=nfc,
                        skip_empty_units=skip_empty_units, split=split, unpack_limit=unpack_limit)


def _read_corpus(path: Path, source: str, *, format: str | None, units: str, nfc: bool,
                 skip_empty_units: bool, split: str | None,
                 unpack_limit: int = DEFAULT_UNPACK_LIMIT) -> ParallelCorpus:
    if units not in UNIT_KINDS:
        raise CorpusError(f"{SETTING} must be lines or paragraphs, not {units!r}",
                          setting="units", value=units)
    if not path.exists():
        raise CorpusError(f"{path}: no such file or folder")
    if format is not None and format not in FORMATS:
        raise CorpusError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    if path.is_dir():
        check_folder_entries(path)
    elif is_zip(path):
        return _read_zip(path, source, format=format, units=units, nfc=nfc,
                         skip_empty_units=skip_empty_units, split=split, limit=unpack_limit)
    elif is_stream(path) and format is None:
        raise CorpusError(f"{path} is a stream (a pipe or a device), whose format cannot be told "
                          f"from a name: pass {setting('format')} ({', '.join(STREAM_FORMATS)})")
    format = format or detect_format(path)
    if units == "paragraphs" and format != "folder":
        raise CorpusError(f"{SETTING} paragraphs applies to the folder format only",
                          setting="units", value=units)
    if split is not None and format not in ("flores200", "flores_plus"):
        raise CorpusError(f"{SETTING} is for FLORES's layouts (dev/ and devtest/ folders); "
                          f"{path} is {format}", setting="split", value=split)
    raw = _read(path, format, units, split or DEFAULT_SPLIT)
    return build(raw, format=format, source=source, nfc=nfc, skip_empty_units=skip_empty_units)


def _read_zip(path: Path, source: str, *, limit: int, **options) -> ParallelCorpus:
    """A zipped corpus: unpacked into a temporary folder and read from there (a lone data file
    in it, as that file); messages name the archive's entries (`corpus.zip/eng_Latn.txt:3`)."""
    with tempfile.TemporaryDirectory(prefix="analyzer-zip-") as folder:
        root = unpack_zip(path, Path(folder), name=str(path), limit=limit)
        inside = [item for item in root.iterdir() if not item.name.startswith(".")]
        if len(inside) == 1 and inside[0].is_file() and inside[0].suffix.lower() in BY_SUFFIX:
            root = inside[0]
        try:
            return _read_corpus(root, source, **options)
        except CorpusError as error:
            raise in_archive(error.renamed(folder, str(path)), str(path)) from None


def in_archive(error: AnalyzerError, archive: str) -> AnalyzerError:
    """An error met inside an archive, its message naming the archive: a reader that names a
    file by its name alone (`eng_Latn.txt: 1 line`) is said as `corpus.zip: eng_Latn.txt: 1
    line`.

    >>> str(in_archive(CorpusError("misaligned: a.txt: 1 line"), "c.zip"))
    'c.zip: misaligned: a.txt: 1 line'
    >>> str(in_archive(CorpusError("c.zip/a.txt:3: empty"), "c.zip"))
    'c.zip/a.txt:3: empty'
    """
    if archive in error.message:
        return error
    return type(error)(f"{archive}: {error.message}", **{**error._all_fields(),
                                                         "file": error.file or archive})


def default_name(path: Path, corpus: ParallelCorpus) -> str:
    """The name a corpus is stored under when none is given: the file's name without its
    endings, or the folder's; a stream's (which has no name) from its content, so the same
    content gets the same name.

    >>> default_name(Path("data/flores.dev.tsv"), ParallelCorpus({}, "tsv", ""))
    'flores'
    """
    if is_hub_spec(path):  # hf:openlanguagedata/flores_plus@main -> flores_plus
        return str(path).split("/")[-1].split("@")[0]
    if is_stream(path):
        return f"stream-{corpus.content_hash()[:8]}"
    return path.name.split(".")[0] if not path.is_dir() else path.resolve().name


STREAM_FORMATS = ("tsv", "csv", "jsonl", "tmx")
"""The formats that are one file, and so can come from a pipe (`<(zcat corpus.tsv.gz)`)."""


def is_stream(path: Path) -> bool:
    """Whether `path` is something other than a regular file or a folder: a named pipe,
    a process substitution, a device. Read once, to its end, as a stream."""
    return is_special(path)


def check_folder_entries(folder: Path) -> None:
    """Refuse, before reading anything, a corpus folder holding a named pipe, a socket, a
    device or a dangling link: reading one could block forever, and none is a corpus file.
    Sub-folders are left alone (no format reads them)."""
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        why = None if os.path.isdir(entry.path) else not_regular(Path(entry.path))
        if why is not None:
            hint = (f" (a pipe can be given as the corpus itself, with {setting('format')})"
                    if why == "a named pipe" else "")
            raise CorpusError(f"{entry.path} is {why}, not a regular file; a corpus folder "
                              f"holds only regular files{hint}", file=entry.path)


COMPRESSED_SUFFIXES = {".gz": "gunzip -k", ".zst": "unzstd", ".xz": "unxz -k"}
"""Endings of compressed files, each with the command that decompresses one."""
BY_SUFFIX = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".tmx": "tmx",
             ".parquet": "parquet"}
"""The format of a file by its ending (what `detect_format` tells from a name)."""
NOT_LANGUAGE_SUFFIXES = {
    "md", "txt", "rst", "html", "htm", "xml", "json", "jsonl", "ndjson", "yaml", "yml", "toml",
    "ini", "cfg", "csv", "tsv", "tmx", "py", "sh", "js", "log", "pdf", "doc", "docx", "gz", "bz",
    "bz2", "xz", "zip", "tar", "tgz", "zst", "db", "sqlite", "lock", "bak", "orig", "tmp", "swp",
    "ids", "meta", "info", "license", "readme",
}
"""File endings that name a kind of file, never a language (some are also ISO 639 codes)."""


def detect_format(path: Path) -> str:
    """The format from what is there: a folder of .txt or of name.<lang> files, or a file's
    suffix. When nothing fits, the error says what was found."""
    if path.is_dir():
        if language_files(path):
            return "folder"
        if flores_files(path):
            return "flores200"
        if flores_plus_files(path):
            return "flores_plus"
        if _moses_files(path):
            return "moses"
        files = sorted(p.name for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        data = [name for name in files if Path(name).suffix.lower() in BY_SUFFIX]
        if data:
            raise CorpusError(f"{path} is a folder holding {', '.join(data)}; give the file "
                              f"itself, e.g. analyzer ingest {path / data[0]}")
        found = ", ".join(files[:8]) + (", ..." if len(files) > 8 else "") if files else "nothing"
        raise CorpusError(f"{path}: no corpus files here (found: {found}); expected <lang>.txt "
                          "files, Moses-style name.<lang> files, FLORES-200's or FLORES+'s dev/ "
                          "and devtest/ folders, or give a .tsv, .csv, .jsonl, .parquet or .tmx "
                          "file")
    suffix = path.suffix.lower()
    if suffix in BY_SUFFIX:
        return BY_SUFFIX[suffix]
    inner = Path(path.stem).suffix.lower()
    if suffix in COMPRESSED_SUFFIXES and (inner in BY_SUFFIX or inner == ".txt"):
        raise CorpusError(f"{path}: a compressed file; a corpus file is read as it is: "
                          f"decompress it first ({COMPRESSED_SUFFIXES[suffix]} {path})")
    siblings = _moses_siblings(path)
    if len(siblings) >= 2:
        return "moses"
    if len(siblings) == 1:
        raise CorpusError(f"{path}: a Moses-style corpus needs a file per language beside it "
                          f"({path.with_suffix('.en').name}, {path.with_suffix('.de').name}, ...); "
                          "this one has none")
    raise CorpusError(f"{path}: cannot tell the format from the name; pass {setting('format')} "
                      f"({', '.join(FORMATS)})")


def _read(path: Path, format: str, units: str, split: str) -> RawCorpus:
    if is_stream(path) and format not in STREAM_FORMATS:
        raise CorpusError(f"{path} is a stream (a pipe or a device): the {format} format needs "
                          f"files; a stream can be {', '.join(STREAM_FORMATS)}")
    if format in ("flores200", "flores_plus"):
        if not path.is_dir():
            raise CorpusError(f"{path}: the {format} format needs the release's folder (dev/ "
                              "and devtest/ inside)")
        return read_flores(path, split, plus=format == "flores_plus")
    if format == "folder":
        if not path.is_dir():
            raise CorpusError(f"{path}: the folder format needs a folder of <lang>.txt files")
        return read_folder(path, units)
    if format == "moses":
        files = _moses_files(path) if path.is_dir() else _moses_siblings(path)
        if not files:
            raise CorpusError(f"{path}: no Moses-style name.<lang> files")
        return read_moses(files)
    if path.is_dir():
        raise CorpusError(f"{path}: the {format} format needs a file, not a folder")
    if format in ("tsv", "csv"):
        return read_table(path, delimiter="\t" if format == "tsv" else ",")
    if format == "jsonl":
        return read_jsonl(path)
    if format == "parquet":
        return read_parquet(path)
    return read_tmx(path)


def _moses_siblings(path: Path) -> list[Path]:
    """`name.de` -> every `name.<lang>` file beside it."""
    stem = path.name.rsplit(".", 1)[0] if "." in path.name else path.name
    return sorted(p for p in path.parent.glob(f"{stem}.*") if p.is_file()
                  and p.name.count(".") == stem.count(".") + 1 and _looks_like_code(p.suffix))


def _moses_files(folder: Path) -> list[Path]:
    """The files of the one `name.<lang>` set (two or more files) in a folder."""
    sets: dict[str, list[Path]] = {}
    for p in folder.iterdir():
        if p.is_file() and "." in p.name and _looks_like_code(p.suffix):
            sets.setdefault(p.name.rsplit(".", 1)[0], []).append(p)
    sets = {stem: files for stem, files in sets.items() if len(files) >= 2}
    if len(sets) > 1:
        raise CorpusError(f"{folder}: several Moses-style sets ({', '.join(sorted(sets))}); "
                          "name one of their files instead of the folder")
    return sorted(next(iter(sets.values()))) if sets else []


def _looks_like_code(suffix: str) -> bool:
    """Whether a file ending (`.de`, `.eng_Latn`) is a language code, not a kind of file."""
    code = suffix.lstrip(".")
    if code.lower() in NOT_LANGUAGE_SUFFIXES:
        return False
    if not (2 <= len(code) <= 12 and code.replace("_", "").replace("-", "").isalpha()):
        return False
    try:
        normalise_language(code)
    except CorpusError:
        return False
    return True


def is_blank(text: str) -> bool:
    """Whether a text holds nothing to read: only white space and invisible format characters
    (Unicode category Cf: zero-width space, joiners, word joiner, soft hyphen, marks of
    direction). Such a unit is empty, whatever its length.

    >>> is_blank("\u200b\u200c \u2060\u00ad"), is_blank("a\u200b")
    (True, False)
    """
    return all(char.isspace() or unicodedata.category(char) == "Cf" for char in text)


def build(raw: RawCorpus, *, format: str, source: str, nfc: bool = False,
          skip_empty_units: bool = False) -> ParallelCorpus:
    """Normalise codes, reject or drop empty units, apply NFC if asked."""
    texts: dict[str, list[str]] = {}
    given: dict[str, str] = {}
    for code, column in raw.columns.items():
        try:
            language = normalise_language(code)
        except CorpusError as error:
            raise CorpusError(f"{raw.origin[code]}: {error}") from None
        if language in texts:
            earlier = given[language]
            if raw.origin[earlier] == raw.origin[code]:  # one file's columns: name the columns
                raise CorpusError(f"{raw.origin[code]}: the columns {earlier!r} and {code!r} are "
                                  f"both {language}: one language, two columns (keep one, or "
                                  "give them codes of different languages)", value=code)
            raise CorpusError(f"{raw.origin[earlier]} and {raw.origin[code]} are both "
                              f"{language}: one language, two files", value=code)
        texts[language], given[language] = column, code
    if len(texts) > MAX_LANGUAGES:
        raise CorpusError(f"{source}: {len(texts):,} languages, more than the {MAX_LANGUAGES:,} "
                          "a corpus may have (runs, reports and the service are sized for "
                          "that); split it into several corpora", value=len(texts))
    if len(texts) < 2:
        only = ", ".join(raw.origin.values()) or source
        raise CorpusError(f"{only}: a parallel corpus needs two or more languages, found {len(texts)}")
    n_units = len(raw.unit_labels)
    if n_units == 0:
        raise CorpusError(f"{source}: no units (the input is empty)")
    unit_ids = raw.unit_ids or [None] * n_units
    empty = [i for i in range(n_units) if any(is_blank(column[i]) for column in texts.values())]
    if empty and not skip_empty_units:
        first = empty[0]
        where = [raw.origin[given[lang]] for lang, column in texts.items() if is_blank(column[first])]
        invisible = any(column[first] and not column[first].isspace() for lang, column in
                        texts.items() if is_blank(column[first]))
        raise CorpusError(f"{raw.unit_labels[first]} is empty in {', '.join(where)}"
                          + (" (it holds only invisible characters: zero-width, joiners, soft "
                             "hyphens)" if invisible else "")
                          + f" ({len(empty)} empty unit{'s' if len(empty) > 1 else ''} in all); "
                          "aligned units need text in every language "
                          f"({setting('skip_empty_units')} drops them in every language)")
    if empty:
        keep = sorted(set(range(n_units)) - set(empty))
        texts = {lang: [column[i] for i in keep] for lang, column in texts.items()}
        unit_ids = [unit_ids[i] for i in keep]
        if not keep:
            raise CorpusError(f"{source}: every unit is empty in some language")
    changed = 0
    if nfc:
        normalised = {lang: [unicodedata.normalize("NFC", t) for t in column]
                      for lang, column in texts.items()}
        changed = sum(
            any(normalised[lang][i] != texts[lang][i] for lang in texts)
            for i in range(len(unit_ids))
        )
        texts = normalised
    return ParallelCorpus(texts, format, source, unit_ids, len(empty), changed, nfc, raw.not_read,
                          raw.notes)
