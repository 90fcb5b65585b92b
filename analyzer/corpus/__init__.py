"""Read parallel corpora in the formats people have, check them, and normalise them.

No database here: `read_corpus` returns a `ParallelCorpus` (aligned texts per language) or
raises `CorpusError` with a message naming the file, line or value at fault.

>>> corpus = read_corpus(SAMPLE_CORPUS)
>>> corpus.n_units, "eng_Latn" in corpus.languages
(20, True)
"""

import importlib.resources
from pathlib import Path

from .archives import DEFAULT_UNPACK_LIMIT
from .errors import CorpusError
from .files import lone_surrogate
from .flores import DEFAULT_SPLIT, FLORES_SPLITS
from .languages import language_name, normalise_language, script_name, script_of
from .parallel import BY_SUFFIX, FORMATS, UNIT_KINDS, ParallelCorpus, default_name, detect_format, read_corpus
from .readers import read_lines

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
