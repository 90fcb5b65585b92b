"""Which BPE engine runs, decided in one place: `ANALYZER_ENGINE` (python forces the pure
engine, compiled insists on the compiled one; unset, the compiled one when it was built), and
the compiled extension module itself when it may be used. `engines` picks the engine from it;
the pre-tokenizers' compiled splitter (`native_split`) asks it too."""

from __future__ import annotations

import importlib
import os
import sys
from functools import lru_cache
from types import ModuleType

ENGINE_ENV = "ANALYZER_ENGINE"
CHOICES = ("compiled", "python")


@lru_cache(maxsize=1)
def wanted() -> str:
    """"compiled", "python", or "" (whichever is built); a value that is neither is said once
    on stderr and ignored."""
    value = os.environ.get(ENGINE_ENV, "").strip().lower()
    if value and value not in CHOICES:
        sys.stderr.write(f"analyzer: {ENGINE_ENV}={value!r} is neither compiled nor python; "
                         "ignoring it\n")
        return ""
    return value


@lru_cache(maxsize=1)
def extension() -> ModuleType | None:
    """The compiled extension (`analyzer.bpe._engine`), or None when it is not built or the
    pure engine was asked for."""
    if wanted() == "python":
        return None
    try:
        from . import _engine
    except ImportError:
        return None
    return _engine


def compiled_module(package: str) -> ModuleType | None:
    """A package's compiled engine (`<package>._engine`, e.g. "analyzer.unigram"), or None
    when it is not built or the pure engine was asked for; with `ANALYZER_ENGINE=compiled`, a
    missing one is an ImportError."""
    if wanted() == "python":
        return None
    try:
        return importlib.import_module(f"{package}._engine")
    except ImportError:
        if wanted() == "compiled":
            raise
        return None
