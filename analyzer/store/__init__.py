"""SQLite storage: one `open_db` that migrates, and typed reads and atomic bulk writes."""

from .corpora import (CorpusSummary, LanguageStats, get_corpus, list_corpora, load_texts,
                      save_corpus)
from .db import DB_ENV, DEFAULT_DB, default_db_path, open_db
from .errors import DatabaseBusy, StoreError
from .pending import recover_run, save_pending
from .runs import (COMPLETE, FAILED, INTERRUPTED, RUNNING, RunSummary, VocabularyRecord,
                   create_run, finish_run, get_run, list_runs, load_counts, load_merges, mark_run,
                   reap_stale_runs, vocabulary_totals, vocabularies)

__all__ = [
    "COMPLETE",
    "FAILED",
    "INTERRUPTED",
    "RUNNING",
    "RunSummary",
    "VocabularyRecord",
    "create_run",
    "finish_run",
    "get_run",
    "list_runs",
    "load_counts",
    "load_merges",
    "mark_run",
    "reap_stale_runs",
    "vocabulary_totals",
    "vocabularies",
    "DB_ENV",
    "DEFAULT_DB",
    "CorpusSummary",
    "DatabaseBusy",
    "recover_run",
    "save_pending",
    "LanguageStats",
    "StoreError",
    "default_db_path",
    "get_corpus",
    "list_corpora",
    "load_texts",
    "open_db",
    "save_corpus",
]
