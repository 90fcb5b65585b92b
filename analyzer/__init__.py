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

import importlib
import os
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

# Arrow's default allocator (mimalloc) reserves a gigabyte of address space at its first
# allocation: under `ulimit -v` that alone left a run no room to train. The system's allocator
# maps what it uses. Set before pyarrow is first imported (a choice of one's own is kept).
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

try:
    __version__ = version("analyzer")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

_WHERE = {
    "bpe": "analyzer.bpe",
    "read_corpus": "analyzer.corpus", "CorpusError": "analyzer.corpus",
    "open_db": "analyzer.store", "save_corpus": "analyzer.store", "StoreError": "analyzer.store",
    "RunSettings": "analyzer.runs", "RunError": "analyzer.runs", "execute_run": "analyzer.runs",
    "load_run_data": "analyzer.metrics", "language_metrics": "analyzer.metrics",
    "export_document": "analyzer.export", "show_document": "analyzer.export",
    "export_csv": "analyzer.export",
    "write_report": "analyzer.report",
    "resolve_tokenizer": "analyzer.external", "TokenizerError": "analyzer.external",
}

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


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use (PEP 562)."""
    if name not in _WHERE:
        raise AttributeError(f"module 'analyzer' has no attribute {name!r}")
    module = importlib.import_module(_WHERE[name])
    value = module if name == "bpe" else getattr(module, name)
    globals()[name] = value
    return value
