"""What a client is shown of this machine's files: their names, never their folders.

The library's documents name whole paths, for the command line's user, who is on this machine:
where a corpus was ingested from, where a tokenizer's file was found (a package's folder in the
server's Python environment, a cache in its home, the temporary folder). A client of the
service is elsewhere, and may publish what it is shown: it is told which file, as a published
report is (`analyzer.report.files.without_local_paths`), never where this server keeps it (the
database's own path: `state.without_paths`).

>>> from analyzer.store import CorpusRead
>>> corpus = CorpusRead(id=1, name="h", source="/home/ann/corpora/h", format="folder", units=1,
...                     languages=[], bytes=1, content_hash="", nfc=False, created="")
>>> source_shown(corpus).source
'h'
"""

from __future__ import annotations

from typing import TypeVar

from analyzer.external import Availability
from analyzer.report.files import without_local_paths
from analyzer.store import CorpusRead, VocabularyRead

Shown = TypeVar("Shown", CorpusRead, VocabularyRead)


def source_shown(item: Shown) -> Shown:
    """A corpus's or a vocabulary's document with its `source` (the folder a corpus was
    ingested from, the file a tokenizer was read from) named without its folders."""
    if not item.source:
        return item
    return item.model_copy(update={"source": without_local_paths(item.source)})


def tokenizer_document(found: Availability) -> dict:
    """`analyzer tokenizers --json`'s document of a catalog entry, with the files it was found
    in, and the places it was looked for, named without their folders."""
    document = found.document()
    document["resolves_from"] = {name: without_local_paths(where)
                                 for name, where in document["resolves_from"].items()}
    if document["missing"]:
        document["missing"] = without_local_paths(document["missing"])
    document["refused"] = [without_local_paths(line) for line in document["refused"]]
    return document
