"""SQLite storage: one `open_db` that checks and migrates, typed reads, atomic bulk writes.

    db = open_db("analyzer.db")
    save_corpus(db, read_corpus("parallel_corpora/harbour_town"), "harbour_town")
    get_corpus(db, "harbour_town").language_stats

No SQL is written outside this package.
"""

from typing import TYPE_CHECKING

from analyzer.lazy import lazy_names

if TYPE_CHECKING:
    from analyzer.identity import Algorithm, VocabKind

    from .corpora import (
        check_corpus_name,
        get_corpus,
        get_corpus_by_id,
        list_corpora,
        load_texts,
        load_unit,
        load_unit_ids,
        save_corpus,
        unit_stats,
    )
    from .db import (
        AnalyzerDatabase,
        LockWait,
        WaitBudget,
        default_lock_wait,
        open_db,
        reconnect,
        write_transaction,
    )
    from .errors import DatabaseBusy, DatabaseGone, DiskFull, NotFound, RunNotComplete, StoreError
    from .kinds import IMPORTED_SIZE, QueueStatus, ReplacementTexts, RunStatus
    from .location import DB_ENV, DEFAULT_DB
    from .models import (
        CorpusDetail,
        CorpusRead,
        LanguageStats,
        QueuedRunRead,
        RunRead,
        SourceDetail,
        SourceRead,
        VocabularyRead,
    )
    from .pending import recover_run, save_pending
    from .queue import (
        ClaimedRun,
        QueueStateError,
        cancel_queued,
        claim_next,
        enqueue_run,
        finish_queued,
        get_queued,
        queued_runs,
        requeue_starting,
        return_to_waiting,
    )
    from .replacements import TokenHistogram, load_chosen, load_histograms, load_replacements
    from .results import StoredMerge, VocabularyRecord, finish_run
    from .runs import (
        NewRun,
        create_run,
        get_run,
        iter_merges,
        list_runs,
        load_chunk_counts,
        load_counts,
        load_joined_counts,
        load_merges,
        load_model,
        load_split_words,
        load_vocabulary_overlaps,
        load_vocabulary_scripts,
        mark_run,
        measured_names,
        model_digests,
        reap_stale_runs,
        record_training,
        running_runs,
        vocabularies,
        vocabulary_totals,
    )
    from .sources import get_source, list_sources, remove_source, save_source

__getattr__ = lazy_names(__name__, {
    "analyzer.identity": ("Algorithm", "VocabKind"),
    ".corpora": ("check_corpus_name", "get_corpus", "get_corpus_by_id", "list_corpora",
        "load_texts", "load_unit", "load_unit_ids", "save_corpus", "unit_stats"),
    ".db": ("AnalyzerDatabase", "LockWait", "WaitBudget", "default_lock_wait", "open_db",
            "reconnect", "write_transaction"),
    ".errors": ("DatabaseBusy", "DatabaseGone", "DiskFull", "NotFound", "RunNotComplete",
        "StoreError"),
    ".location": ("DB_ENV", "DEFAULT_DB"),
    ".kinds": ("IMPORTED_SIZE", "QueueStatus", "ReplacementTexts", "RunStatus"),
    ".models": ("CorpusDetail", "CorpusRead", "LanguageStats", "QueuedRunRead", "RunRead",
        "SourceDetail", "SourceRead", "VocabularyRead"),
    ".pending": ("recover_run", "save_pending"),
    ".queue": ("ClaimedRun", "QueueStateError", "cancel_queued", "claim_next", "enqueue_run",
        "finish_queued", "get_queued", "queued_runs", "requeue_starting", "return_to_waiting"),
    ".replacements": ("TokenHistogram", "load_chosen", "load_histograms", "load_replacements"),
    ".results": ("StoredMerge", "VocabularyRecord", "finish_run"),
    ".runs": ("NewRun", "create_run", "get_run", "iter_merges", "list_runs", "load_chunk_counts",
        "load_counts", "load_joined_counts", "load_merges", "load_model", "load_split_words",
        "load_vocabulary_overlaps", "load_vocabulary_scripts", "mark_run", "measured_names",
        "model_digests", "reap_stale_runs", "record_training", "running_runs", "vocabularies",
        "vocabulary_totals"),
    ".sources": ("get_source", "list_sources", "remove_source", "save_source"),
})

__all__ = [
    "check_corpus_name",
    "Algorithm",
    "IMPORTED_SIZE",
    "DB_ENV",
    "DEFAULT_DB",
    "AnalyzerDatabase",
    "LockWait",
    "WaitBudget",
    "CorpusDetail",
    "CorpusRead",
    "DatabaseBusy",
    "DatabaseGone",
    "DiskFull",
    "LanguageStats",
    "NewRun",
    "ClaimedRun",
    "QueueStateError",
    "QueueStatus",
    "QueuedRunRead",
    "ReplacementTexts",
    "RunRead",
    "RunStatus",
    "NotFound",
    "RunNotComplete",
    "StoreError",
    "StoredMerge",
    "TokenHistogram",
    "VocabKind",
    "VocabularyRead",
    "VocabularyRecord",
    "cancel_queued",
    "claim_next",
    "create_run",
    "enqueue_run",
    "finish_queued",
    "get_queued",
    "queued_runs",
    "requeue_starting",
    "return_to_waiting",
    "default_lock_wait",
    "write_transaction",
    "finish_run",
    "get_source",
    "list_sources",
    "record_training",
    "remove_source",
    "save_source",
    "SourceDetail",
    "SourceRead",
    "get_corpus",
    "get_corpus_by_id",
    "get_run",
    "list_corpora",
    "list_runs",
    "load_chosen",
    "load_unit",
    "load_unit_ids",
    "load_chunk_counts",
    "load_counts",
    "load_joined_counts",
    "load_split_words",
    "load_vocabulary_overlaps",
    "load_vocabulary_scripts",
    "load_histograms",
    "iter_merges",
    "load_merges",
    "load_model",
    "model_digests",
    "load_replacements",
    "load_texts",
    "mark_run",
    "measured_names",
    "reconnect",
    "reap_stale_runs",
    "running_runs",
    "open_db",
    "recover_run",
    "save_corpus",
    "save_pending",
    "unit_stats",
    "vocabularies",
    "vocabulary_totals",
]
