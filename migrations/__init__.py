"""The database schema, as ordered migrations (sqlite-utils `Migrations`).

`analyzer.store.open_db` applies whatever is pending on every open, so a new or an old
database is always at the current schema. Add a migration at the end; never edit one that
has shipped. The SQLModel classes in `analyzer.store.models` mirror these tables (a test
checks that they agree).

Installed as `analyzer.migrations` (see pyproject.toml), so an installed wheel has it too.
"""

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

migrations = Migrations("analyzer")


def _run(db: Database, statements: str) -> None:
    # One execute per statement: executescript would COMMIT and break the migration's
    # transaction.
    for statement in statements.split(";"):
        if statement.strip():
            db.execute(statement)


@migrations()
def m001_corpora(db: Database) -> None:
    _run(db, """
    CREATE TABLE corpora (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        format TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        n_units INTEGER NOT NULL,
        nfc INTEGER NOT NULL DEFAULT 0,
        created TEXT NOT NULL
    );
    CREATE TABLE corpus_languages (
        corpus_id INTEGER NOT NULL REFERENCES corpora(id) ON DELETE CASCADE,
        lang TEXT NOT NULL,
        position INTEGER NOT NULL,
        PRIMARY KEY (corpus_id, lang)
    );
    CREATE TABLE units (
        corpus_id INTEGER NOT NULL REFERENCES corpora(id) ON DELETE CASCADE,
        unit INTEGER NOT NULL,
        source_id TEXT,
        PRIMARY KEY (corpus_id, unit)
    );
    CREATE TABLE texts (
        id INTEGER PRIMARY KEY,
        corpus_id INTEGER NOT NULL,
        unit INTEGER NOT NULL,
        lang TEXT NOT NULL,
        text TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        chars INTEGER NOT NULL,
        UNIQUE (corpus_id, lang, unit),
        FOREIGN KEY (corpus_id, unit) REFERENCES units(corpus_id, unit) ON DELETE CASCADE,
        FOREIGN KEY (corpus_id, lang) REFERENCES corpus_languages(corpus_id, lang) ON DELETE CASCADE
    )
    """)


@migrations()
def m002_runs(db: Database) -> None:
    # Token counts: one row per (vocabulary, size, language) holding the per-unit counts as a
    # little-endian uint32 array aligned with the run's measured units, plus their total for
    # SQL. Per-unit rows would make a 58-language cross run ~36 M rows; this keeps it ~25 k.
    _run(db, """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        corpus_id INTEGER NOT NULL REFERENCES corpora(id),
        languages TEXT NOT NULL,
        pivot TEXT NOT NULL,
        sizes TEXT NOT NULL,
        per_language INTEGER NOT NULL,
        cross_matrix INTEGER NOT NULL,
        holdout REAL NOT NULL,
        seed INTEGER NOT NULL,
        measured_units TEXT NOT NULL,
        tie_break TEXT NOT NULL,
        min_pair_count INTEGER NOT NULL,
        engine_version TEXT NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        pid INTEGER,
        started TEXT NOT NULL,
        finished TEXT,
        seconds REAL
    );
    CREATE TABLE vocabularies (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        scope TEXT NOT NULL,
        kind TEXT NOT NULL,
        size INTEGER NOT NULL,
        trained_bytes INTEGER,
        merges_learned INTEGER,
        stop_reason TEXT,
        seconds REAL,
        roundtrip_ok INTEGER,
        UNIQUE (run_id, scope)
    );
    CREATE TABLE merges (
        vocab_id INTEGER NOT NULL REFERENCES vocabularies(id) ON DELETE CASCADE,
        rank INTEGER NOT NULL,
        left_id INTEGER NOT NULL,
        right_id INTEGER NOT NULL,
        new_id INTEGER NOT NULL,
        count INTEGER NOT NULL,
        token BLOB NOT NULL,
        PRIMARY KEY (vocab_id, rank)
    );
    CREATE TABLE token_counts (
        vocab_id INTEGER NOT NULL REFERENCES vocabularies(id) ON DELETE CASCADE,
        size INTEGER NOT NULL,
        lang TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        unit_tokens BLOB NOT NULL,
        PRIMARY KEY (vocab_id, size, lang)
    )
    """)


@migrations()
def m003_tokenizer_provenance(db: Database) -> None:
    # Production tokenizers: which library counted, and where its files came from.
    _run(db, """
    ALTER TABLE vocabularies ADD COLUMN library TEXT;
    ALTER TABLE vocabularies ADD COLUMN source TEXT
    """)


@migrations()
def m004_run_owner_and_meta(db: Database) -> None:
    # A run's process is its host, pid and the pid's start time, so a stale run is told apart
    # from a live one even after the pid is reused, and a run started on another host is never
    # reaped from here. `meta` records the analyzer version that last migrated the database,
    # so an older analyzer can say which version it would need.
    _run(db, """
    ALTER TABLE runs ADD COLUMN host TEXT;
    ALTER TABLE runs ADD COLUMN pid_start TEXT;
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )
    """)


@migrations()
def m005_words_and_vocabulary_kinds(db: Database) -> None:
    # Whitespace words per text are counted once here (and at ingest), not on every read of a
    # run's metrics. A vocabulary's kind says what it is (shared, language, parity,
    # production) instead of only whether it was trained.
    db.execute("ALTER TABLE texts ADD COLUMN words INTEGER NOT NULL DEFAULT 0")
    rows = db.execute("SELECT id, text FROM texts").fetchall()
    db.conn.executemany("UPDATE texts SET words = ? WHERE id = ?",
                        ((len(text.split()), text_id) for text_id, text in rows))
    db.execute("UPDATE vocabularies SET kind = CASE WHEN kind = 'production' THEN 'production' "
               "WHEN scope = 'shared' THEN 'shared' ELSE 'language' END")


@migrations()
def m006_pretokenizers(db: Database) -> None:
    # A vocabulary is now (scope, pre-tokenizer): the same kind trained under several split
    # rules in one run. The table is rebuilt for its new UNIQUE constraint (open_db migrates
    # with foreign keys off, so dropping the old table cascades nowhere); rows stored before
    # read back as pre-tokenizer "none" (production tokenizers: NULL, they split their own way).
    # chunk_counts: how many chunks each measured unit is cut into, per pre-tokenizer.
    _run(db, """
    CREATE TABLE vocabularies_new (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        scope TEXT NOT NULL,
        kind TEXT NOT NULL,
        size INTEGER NOT NULL,
        trained_bytes INTEGER,
        merges_learned INTEGER,
        stop_reason TEXT,
        seconds REAL,
        roundtrip_ok INTEGER,
        library TEXT,
        source TEXT,
        pretokenizer TEXT,
        pattern TEXT,
        UNIQUE (run_id, scope, pretokenizer)
    );
    INSERT INTO vocabularies_new (id, run_id, scope, kind, size, trained_bytes, merges_learned,
        stop_reason, seconds, roundtrip_ok, library, source, pretokenizer, pattern)
        SELECT id, run_id, scope, kind, size, trained_bytes, merges_learned, stop_reason, seconds,
               roundtrip_ok, library, source,
               CASE WHEN kind = 'production' THEN NULL ELSE 'none' END, NULL
        FROM vocabularies;
    DROP TABLE vocabularies;
    ALTER TABLE vocabularies_new RENAME TO vocabularies;
    ALTER TABLE runs ADD COLUMN pretokenizers TEXT NOT NULL DEFAULT '["none"]';
    CREATE TABLE chunk_counts (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        pretokenizer TEXT NOT NULL,
        lang TEXT NOT NULL,
        chunks INTEGER NOT NULL,
        unit_chunks BLOB NOT NULL,
        PRIMARY KEY (run_id, pretokenizer, lang)
    )
    """)


@migrations()
def m007_fairness(db: Database) -> None:
    # Parity-aware vocabularies and training mixes are settings of a run. For every merge of a
    # trained vocabulary, merge_replacements keeps how many occurrences it replaced in each
    # language: in the training texts when it was learned ('trained': who got the vocabulary)
    # and in the measured units ('measured': every language's token count at every size).
    # token_histograms: how often each token occurs in each language's measured units at each
    # size (vocabulary allocation). Blobs are zlib-compressed little-endian arrays.
    _run(db, """
    ALTER TABLE runs ADD COLUMN parity INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN global_merges INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN weights TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE merges ADD COLUMN chosen_by TEXT;
    CREATE TABLE merge_replacements (
        vocab_id INTEGER NOT NULL REFERENCES vocabularies(id) ON DELETE CASCADE,
        texts TEXT NOT NULL,
        lang TEXT NOT NULL,
        per_merge BLOB NOT NULL,
        PRIMARY KEY (vocab_id, texts, lang)
    );
    CREATE TABLE token_histograms (
        vocab_id INTEGER NOT NULL REFERENCES vocabularies(id) ON DELETE CASCADE,
        size INTEGER NOT NULL,
        lang TEXT NOT NULL,
        histogram BLOB NOT NULL,
        PRIMARY KEY (vocab_id, size, lang)
    )
    """)


@migrations()
def m008_superbpe(db: Database) -> None:
    # SuperBPE vocabularies: the run records its transition sizes, each vocabulary its own.
    _run(db, """
    ALTER TABLE runs ADD COLUMN superbpe TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE vocabularies ADD COLUMN transition INTEGER
    """)


@migrations()
def m009_extension(db: Database) -> None:
    # Extended production tokenizers: the run records the bases, the added sizes, the languages
    # that train the additions and a premium target; each extension vocabulary its base's size
    # (where its added ids start).
    _run(db, """
    ALTER TABLE runs ADD COLUMN extend TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE runs ADD COLUMN added TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE runs ADD COLUMN extend_langs TEXT;
    ALTER TABLE runs ADD COLUMN target REAL;
    ALTER TABLE vocabularies ADD COLUMN base_size INTEGER
    """)


@migrations()
def m010_algorithms(db: Database) -> None:
    # Unigram and WordPiece vocabularies (trained by Hugging Face tokenizers): the run records
    # its algorithms; each such vocabulary keeps the model of every size it was trained at (each
    # size its own training), the tokenizer.json byte for byte with its SHA-256.
    _run(db, """
    ALTER TABLE runs ADD COLUMN algorithms TEXT NOT NULL DEFAULT '["bpe"]';
    CREATE TABLE vocabulary_models (
        vocab_id INTEGER NOT NULL REFERENCES vocabularies(id) ON DELETE CASCADE,
        size INTEGER NOT NULL,
        entries INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        document BLOB NOT NULL,
        PRIMARY KEY (vocab_id, size)
    )
    """)


@migrations()
def m011_request_framing(db: Database) -> None:
    # A production tokenizer's per-request framing (issue 27): the tokens its model's chat
    # format adds to a request of one message, and how that number is known (a
    # catalog.FramingBasis: measured, documented, none); NULL where it is not known.
    _run(db, """
    ALTER TABLE vocabularies ADD COLUMN framing INTEGER;
    ALTER TABLE vocabularies ADD COLUMN framing_basis TEXT
    """)


@migrations()
def m012_database_identity_and_unambiguous_digests(db: Database) -> None:
    # A database's own identity, so that what is kept outside it (a run's pending results, in
    # a cache folder other databases of the same file name share) is found by it, not by its
    # file name. And every corpus's content digest made again by the digest that no two
    # contents share (the first one wrote NUL between texts, which a text may hold itself).
    import uuid

    from analyzer.corpus.parallel import content_digest

    db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('database_id', ?)",
               [uuid.uuid4().hex])
    for (corpus_id,) in db.execute("SELECT id FROM corpora").fetchall():
        texts: dict[str, list[str]] = {}
        for lang, text in db.execute("SELECT lang, text FROM texts WHERE corpus_id = ? "
                                     "ORDER BY lang, unit", [corpus_id]):
            texts.setdefault(lang, []).append(text)
        unit_ids = [row[0] for row in db.execute(
            "SELECT source_id FROM units WHERE corpus_id = ? ORDER BY unit", [corpus_id])]
        db.execute("UPDATE corpora SET content_hash = ? WHERE id = ?",
                   [content_digest(texts, unit_ids), corpus_id])


@migrations()
def m013_training_sources(db: Database) -> None:
    # Training sources (issue 39): monolingual text registered by reference, never copied:
    # each file's path, size, time and SHA-256, and its documents and their bytes, counted once.
    # A run that trains on one records the source, the sample's settings and what it took.
    _run(db, """
    CREATE TABLE sources (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        documents TEXT NOT NULL,
        text_field TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        created TEXT NOT NULL
    );
    CREATE TABLE source_files (
        source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        lang TEXT NOT NULL,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        compression TEXT,
        format TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        documents INTEGER NOT NULL,
        invalid_documents INTEGER NOT NULL,
        invalid_bytes INTEGER NOT NULL,
        problem TEXT,
        PRIMARY KEY (source_id, position)
    );
    ALTER TABLE runs ADD COLUMN train_on TEXT;
    ALTER TABLE runs ADD COLUMN train_bytes INTEGER;
    ALTER TABLE runs ADD COLUMN mix TEXT NOT NULL DEFAULT 'natural';
    ALTER TABLE runs ADD COLUMN skip_invalid INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN training TEXT
    """)


@migrations()
def m014_counting_conventions(db: Database) -> None:
    # Counting conventions (issue 40): a run counts each unit (the sum) or each language's
    # units joined into one text, as Petrov et al. count FLORES; and counts a production
    # tokenizer's added special tokens or not. A count keeps its joined total beside its units;
    # a production tokenizer, the special tokens its library adds to each text, the words it
    # splits (tokka-bench's continued words), the scripts of its vocabulary's tokens, and how
    # much of its vocabulary each other tokenizer of the run shares (Jaccard).
    _run(db, """
    ALTER TABLE runs ADD COLUMN count_convention TEXT NOT NULL DEFAULT 'units';
    ALTER TABLE runs ADD COLUMN special_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE token_counts ADD COLUMN joined_tokens INTEGER;
    ALTER TABLE token_counts ADD COLUMN split_words INTEGER;
    ALTER TABLE vocabularies ADD COLUMN special_tokens INTEGER;
    CREATE TABLE vocabulary_scripts (
        vocab_id INTEGER NOT NULL REFERENCES vocabularies(id) ON DELETE CASCADE,
        script TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        PRIMARY KEY (vocab_id, script)
    );
    CREATE TABLE vocabulary_overlaps (
        vocab_id INTEGER NOT NULL REFERENCES vocabularies(id) ON DELETE CASCADE,
        other TEXT NOT NULL,
        shared INTEGER NOT NULL,
        either INTEGER NOT NULL,
        PRIMARY KEY (vocab_id, other)
    )
    """)


@migrations()
def m015_run_queue(db: Database) -> None:
    # The service's queue (issue 43): runs asked for while another is in progress wait here, in
    # order of id, so that a restarted server finds them and starts them. `settings` is the
    # request's RunSettings as JSON; a row ends started (with its run), cancelled or refused.
    _run(db, """
    CREATE TABLE run_queue (
        id INTEGER PRIMARY KEY,
        settings TEXT NOT NULL,
        corpus TEXT,
        status TEXT NOT NULL,
        submitted TEXT NOT NULL,
        finished TEXT,
        run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,
        error TEXT
    );
    CREATE INDEX run_queue_status ON run_queue(status, id)
    """)


@migrations()
def m016_queue_pins_corpus_content(db: Database) -> None:
    # Issue 50: a queued run is asked on the corpus's content as it was then, not on whatever
    # the name holds when its turn comes. `content_hash` is the corpus's digest when the run was
    # queued (NULL for entries queued by an older analyzer: not checked); training on a source,
    # the source's fingerprint follows it (`runs.resolution.pin_of`).
    _run(db, "ALTER TABLE run_queue ADD COLUMN content_hash TEXT")


@migrations()
def m017_count_floor(db: Database) -> None:
    # Issue 54: a run trained on a source may train only on the chunks a language's sample has
    # at least K times (`min_chunk_count`); 1 (every chunk) for every run before.
    _run(db, "ALTER TABLE runs ADD COLUMN min_chunk_count INTEGER NOT NULL DEFAULT 1")


@migrations()
def m018_hub_sources(db: Database) -> None:
    # Issue 54: a training source fetched from the Hugging Face hub by name records where from
    # (`origin`, JSON: the repository, the commit its revision was resolved to once, the configs,
    # split, languages and byte budget); NULL for a source of local files.
    _run(db, "ALTER TABLE sources ADD COLUMN origin TEXT")


@migrations()
def m019_counting_engine(db: Database) -> None:
    # Issue 69: a production tokenizer is counted by the analyzer's own engine where that
    # equals its library, else by the library; `engine` records which ("analyzer", or the
    # library's name), beside `library` (the library and version whose counts these are).
    # NULL for every vocabulary before (their library counted them).
    _run(db, "ALTER TABLE vocabularies ADD COLUMN engine TEXT")
