"""analyzer: what tokenization costs each language, measured on parallel text.

The public API is the names below; everything else may change between versions.

    import analyzer

    db = analyzer.open_db("analyzer.db")
    analyzer.save_corpus(db, analyzer.read_corpus("parallel_corpora/harbour_town"), "harbour")
    run_id = analyzer.execute_run(db, analyzer.RunSettings(sizes=[512, 1024]))
    frame = analyzer.language_metrics(analyzer.load_run_data(db, run_id))
    analyzer.write_report(db, run_id)

`analyzer.bpe` is the BPE core (`train`, `encode`, `decode`, `count_tokens`, the literal
`reference`); it imports nothing but the standard library, and `import analyzer` stays as light:
the other names load on first use.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from analyzer.lazy import lazy_names

# Arrow's default allocator (mimalloc) reserves a gigabyte of address space at its first
# allocation: under `ulimit -v` that alone left a run no room to train. The system's allocator
# maps what it uses. Set before pyarrow is first imported (a choice of one's own is kept).
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
# numpy's OpenBLAS starts a thread per core at its first matrix product (the intervals'
# bootstrap), each with a 32 MB buffer; under `ulimit -v` with no room for them it retried the
# mapping forever, deaf to SIGTERM (`show` hung, a run hung after storing). One thread maps one
# buffer, at load; the products here are small. Set before numpy is first imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__all__ = [
    "CorpusError", "RunError", "RunSettings", "StoreError", "TokenizerError", "__version__", "bpe",
    "execute_run", "export_csv", "export_document", "language_metrics", "load_run_data",
    "open_db", "read_corpus", "resolve_tokenizer", "save_corpus", "show_document",
    "write_report",
]

if TYPE_CHECKING:
    from analyzer import bpe
    from analyzer.corpus import CorpusError, read_corpus
    from analyzer.export import export_csv, export_document, show_document
    from analyzer.external import TokenizerError, resolve_tokenizer
    from analyzer.metrics import language_metrics, load_run_data
    from analyzer.report import write_report
    from analyzer.runs import RunError, RunSettings, execute_run
    from analyzer.store import StoreError, open_db, save_corpus
    from analyzer.version import __version__


__getattr__ = lazy_names(__name__, {
    ".version": ("__version__",),
    ".bpe": ("bpe",),
    ".corpus": ("read_corpus", "CorpusError"),
    ".store": ("open_db", "save_corpus", "StoreError"),
    ".runs": ("RunSettings", "RunError", "execute_run"),
    ".metrics": ("load_run_data", "language_metrics"),
    ".export": ("export_document", "show_document", "export_csv"),
    ".report": ("write_report",),
    ".external": ("resolve_tokenizer", "TokenizerError"),
})
