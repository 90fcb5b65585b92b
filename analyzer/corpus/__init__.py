"""Read parallel corpora in the formats people have, check them, and normalise them.

No database here: `read_corpus` returns a `ParallelCorpus` (aligned texts per language) or
raises `CorpusError` with a message naming the file, line or value at fault.

>>> from analyzer.corpus import SAMPLE_CORPUS, read_corpus
>>> corpus = read_corpus(SAMPLE_CORPUS)
>>> corpus.n_units, "eng_Latn" in corpus.languages
(20, True)
"""

import importlib.resources
from pathlib import Path
from typing import TYPE_CHECKING

from analyzer.lazy import lazy_names

if TYPE_CHECKING:
    from .archives import DEFAULT_UNPACK_LIMIT
    from .choices import DEFAULT_SPLIT, FLORES_SPLITS, FORMATS, UNIT_KINDS
    from .errors import CorpusError
    from .files import lone_surrogate
    from .languages import language_name, normalise_language, script_name, script_of
    from .parallel import (
        BY_SUFFIX,
        ParallelCorpus,
        default_name,
        detect_format,
        read_corpus,
    )
    from .readers import read_lines

__getattr__ = lazy_names(__name__, {
    ".archives": ("DEFAULT_UNPACK_LIMIT",),
    ".errors": ("CorpusError",),
    ".files": ("lone_surrogate",),
    ".choices": ("DEFAULT_SPLIT", "FLORES_SPLITS", "FORMATS", "UNIT_KINDS"),
    ".languages": ("language_name", "normalise_language", "script_name", "script_of"),
    ".parallel": ("BY_SUFFIX", "ParallelCorpus", "default_name", "detect_format",
                  "read_corpus"),
    ".readers": ("read_lines",),
})

SAMPLE_CORPUS = Path(str(importlib.resources.files("analyzer.parallel_corpora") / "harbour_town"))
"""The shipped sample: twelve languages, twenty paragraphs (see its README)."""

__all__ = [
    "BY_SUFFIX",
    "DEFAULT_UNPACK_LIMIT",
    "FORMATS",
    "SAMPLE_CORPUS",
    "UNIT_KINDS",
    "DEFAULT_SPLIT",
    "FLORES_SPLITS",
    "CorpusError",
    "lone_surrogate",
    "ParallelCorpus",
    "default_name",
    "detect_format",
    "language_name",
    "normalise_language",
    "script_name",
    "script_of",
    "read_corpus",
    "read_lines",
]
