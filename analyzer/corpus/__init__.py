"""Read parallel corpora in the formats people have, check them, and normalise them.

No database here: `read_corpus` returns a `ParallelCorpus` (aligned texts per language) or
raises `CorpusError` with a message naming the file, line or value at fault.

>>> from pathlib import Path
>>> corpus = read_corpus(Path(__file__).parents[2] / "parallel_corpora" / "harbour_town")
>>> corpus.n_units, "eng_Latn" in corpus.languages
(20, True)
"""

from .errors import CorpusError
from .languages import language_name, normalise_language
from .parallel import FORMATS, UNIT_KINDS, ParallelCorpus, detect_format, read_corpus

__all__ = [
    "FORMATS",
    "UNIT_KINDS",
    "CorpusError",
    "ParallelCorpus",
    "detect_format",
    "language_name",
    "normalise_language",
    "read_corpus",
]
