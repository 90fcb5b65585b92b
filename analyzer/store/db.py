"""Open the analyzer's SQLite database: one function, checked, migrated on first use.

`open_db` refuses, in words and before changing anything, what is not an analyzer database
(another file, a damaged database, another program's database), and notices what it may not
write to (a read-only file, a schema made by a newer analyzer). Every write of the store goes
through `write_transaction`, which takes SQLite's write lock at once (BEGIN IMMEDIATE), so a
check and the write it guards see the same database, and which turns SQLite's errors (locked,
read-only, full) into a `StoreError` that says what happened.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from .sqlite import Database  # first: it imports sqlite-utils without pandas, before migrations

# isort: split
from analyzer.errors import setting
from analyzer.files import disk_is_full, is_special, kind_of
from analyzer.migrations import migrations
from analyzer.version import __version__

from .errors import DatabaseBusy, DatabaseGone, DiskFull, StoreError
from .location import DB_ENV, DEFAULT_DB

BUSY_TIMEOUT_ENV = "ANALYZER_BUSY_TIMEOUT"
DEFAULT_BUSY_TIMEOUT = 60.0
"""Seconds a write waits for another process's write lock before giving up."""

SQLITE_HEADER = b"SQLite format 3\x00"


class WaitBudget:
    """The seconds one request may spend waiting, in all, however many waits it has (a
    server's `--lock-wait`): each wait gets what is left, and what it took is spent. A deadline
    that does not run while the request works (reads a corpus, receives a body), only while it
    waits; shared by the waits of one request, one after another.

    >>> clock = iter([0.0, 2.0, 10.0, 11.5]).__next__
    >>> budget = WaitBudget(3.0, clock=clock)
    >>> with budget.waiting() as left:
    ...     left
    3.0
    >>> with budget.waiting() as left:
    ...     left
    1.0
    >>> budget.left()
    0.0
    """

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.seconds, self.clock = seconds, clock
        self.spent = 0.0

    def left(self) -> float:
        return max(0.0, self.seconds - self.spent)

    @contextlib.contextmanager
    def waiting(self) -> Iterator[float]:
        """A wait: it may take the seconds given, and what it takes is spent."""
        start = self.clock()
        try:
            yield self.left()
        finally:
            self.spent += self.clock() - start


@dataclass(frozen=True)
class LockWait:
    """How long a connection's writes wait for another process's write lock, and how a user
    sets it (said in the refusal when the wait runs out); with a `budget`, every write of the
    connection waits only what is left of it (a server's request: all its waits together)."""

    seconds: float
    set_by: str = f"{BUSY_TIMEOUT_ENV} sets the wait"
    budget: WaitBudget | None = None


def default_lock_wait() -> LockWait:
    """The command line's wait: `$ANALYZER_BUSY_TIMEOUT`, else 60 s (`busy_timeout`)."""
    return LockWait(busy_timeout())


class AnalyzerDatabase(Database):
    """A sqlite-utils `Database` that knows where it lives and whether it may be written."""

    def __init__(self, conn: sqlite3.Connection, path: Path, *, read_only: str | None,
                 newer: str | None, identity: tuple[int, int] | None = None,
                 lock_wait: LockWait | None = None):
        super().__init__(conn)
        self.path = path
        self.read_only = read_only
        """Why this database cannot be written (None when it can)."""
        self.newer = newer
        """Which newer analyzer made this database's schema (None when it is ours)."""
        self.identity = identity if identity is not None else file_identity(path)
        """The file this connection opened (device, inode): `check_present` compares it with
        the file now at `path`."""
        self.engine: Engine | None = None
        """The SQLModel engine over this same connection (made by `session` on first use)."""
        self.lock_wait = lock_wait or default_lock_wait()
        """How long a write here waits for another process's lock (`reconnect` passes it on)."""

    def wait_for_locks(self, lock_wait: LockWait) -> None:
        """From now on, this connection's writes wait `lock_wait` for another process's lock."""
        self.lock_wait = lock_wait
        self.conn.execute(f"PRAGMA busy_timeout = {int(lock_wait.seconds * 1000)}")

    def check_present(self) -> None:
        """DatabaseGone when the file at `path` is no longer the one this connection opened
        (deleted, or replaced by another): a write would go to a file nobody can open again."""
        now = file_identity(self.path)
        if now is None:
            raise DatabaseGone(f"the database {self.path} was deleted while in use; nothing "
                               "more was written to it")
        if self.identity is not None and now != self.identity:
            raise DatabaseGone(f"the database {self.path} was replaced by another file while in "
                               "use; nothing was written to either")

    def check_ready(self) -> None:
        """StoreError (or DatabaseGone) unless this database is still the file opened, may be
        written (now, not only when opened) and answers a query: what a server's readiness
        probe asks. It takes no lock, so a run writing does not make it wait."""
        self.check_present()
        self.refuse_writes()
        now = _why_read_only(self.path)
        if now:
            raise StoreError(f"{self.path} cannot be written now ({now})")
        self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()

    def check_write_lock(self) -> None:
        """DatabaseBusy unless this connection can take the write lock within its wait (then
        it lets it go at once, having written nothing): a server asks before it starts what
        would otherwise wait for another process's lock unbounded, and for its readiness."""
        with write_transaction(self):
            pass

    def refuse_writes(self) -> None:
        """StoreError when nothing may be written here, saying why; else nothing."""
        if self.read_only:
            raise StoreError(f"{self.path} is read-only ({self.read_only}); nothing was changed")
        if self.newer:
            raise StoreError(f"{self.path} was written by a newer analyzer ({self.newer}) than "
                             f"this one ({__version__}); upgrade analyzer to write to it. "
                             "Nothing was changed")


def file_identity(path: Path) -> tuple[int, int] | None:
    """A file's (device, inode), which stay the same however it is renamed or written; None
    when nothing is there."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def default_db_path() -> Path:
    """`$ANALYZER_DB`, else ./analyzer.db."""
    return Path(os.environ.get(DB_ENV) or DEFAULT_DB)


def busy_timeout() -> float:
    """Seconds to wait for a write lock: `$ANALYZER_BUSY_TIMEOUT`, else 60."""
    value = os.environ.get(BUSY_TIMEOUT_ENV)
    try:
        return max(0.0, float(value)) if value else DEFAULT_BUSY_TIMEOUT
    except ValueError:
        raise StoreError(f"{BUSY_TIMEOUT_ENV}={value!r} is not a number of seconds") from None


def open_db(path: Path | str | None = None, *, create: bool = True) -> AnalyzerDatabase:
    """The database at `path` (default `$ANALYZER_DB` or ./analyzer.db), schema current.

    A missing file becomes a new database, unless `create` is False (then it is a
    StoreError: the commands that only read say "run analyzer ingest first"). A file
    that is not an analyzer database is a StoreError and is left untouched. A database this
    process may not write (read-only file or folder, newer schema) opens for reading; writes
    to it are refused by `write_transaction`.
    """
    path = Path(path) if path is not None else default_db_path()
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not a database file; pass {setting('db')} FILE")
    if is_special(path):  # SQLite would write a journal beside it (/dev/null-journal)
        raise StoreError(f"{path} is {kind_of(os.stat(path).st_mode)}, not a database file; "
                         "nothing was changed. Pass {setting:db} FILE")
    if not path.exists():
        if not path.parent.is_dir():
            raise StoreError(f"{path.parent}: no such folder for the database")
        if not create:
            raise StoreError(f"{path}: no database here yet; run analyzer ingest first "
                             "(or pass {setting:db})")
    else:
        _check_header(path)
    read_only = _why_read_only(path)
    if read_only and not path.exists():
        raise StoreError(f"cannot create {path}: {read_only}")
    conn = None
    try:
        if read_only:
            conn, read_only = _connect_read_only(path, read_only)
        else:
            conn = sqlite3.connect(str(path))
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout() * 1000)}")
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        db = AnalyzerDatabase(conn, path, read_only=read_only, newer=None)
        _check_ours(db, tables)
        db.newer = _newer_schema(db)
        if not db.read_only and not db.newer:
            _migrate(db)
        db.execute("PRAGMA foreign_keys = ON")
        if (db.read_only or db.newer) and migrations.pending(db) and not db.newer:
            raise StoreError(f"{path} needs a schema upgrade, but it is read-only "
                             f"({db.read_only}); open it once with write access")
    except sqlite3.DatabaseError as error:
        _close(conn)
        if disk_is_full(path) or getattr(error, "sqlite_errorname", "") == "SQLITE_FULL":
            raise DiskFull(full_disk_message(path, error)) from None
        raise StoreError(f"{path} is not a usable SQLite database ({error}); it may be damaged. "
                         "Nothing was changed") from None
    except BaseException:
        _close(conn)
        raise
    return db


def reconnect(db: AnalyzerDatabase, *, any_thread: bool = False,
              lock_wait: LockWait | None = None) -> AnalyzerDatabase:
    """Another connection to a database `open_db` has already checked and migrated (a
    service's request gets its own: a connection shared over time can keep an old view).
    `any_thread`: usable from another thread than this one (one at a time), as a request's
    dependency and its handler run on different threads of the server's pool. Its writes wait
    for another process's lock as long as `db`'s do, or `lock_wait`.

    DatabaseGone when the file is no longer the one `db` opened: a new connection never
    creates a database where one was deleted."""
    db.check_present()
    check = not any_thread
    mode = "ro" if db.read_only else "rw"  # never "rwc": nothing is created here
    query = "immutable=1" if db.read_only and db.read_only.endswith(SNAPSHOT) else f"mode={mode}"
    try:
        conn = sqlite3.connect(f"{db.path.resolve().as_uri()}?{query}", uri=True,
                               check_same_thread=check)
    except sqlite3.OperationalError:
        db.check_present()  # deleted between the check and the open: say so
        raise
    conn.execute("PRAGMA foreign_keys = ON")
    opened = AnalyzerDatabase(conn, db.path, read_only=db.read_only, newer=db.newer,
                              identity=db.identity)
    opened.wait_for_locks(lock_wait or db.lock_wait)
    return opened


SNAPSHOT = "read as it is on disk"
"""How a read-only reason ends when the database is opened immutable (see `_connect_read_only`)."""


def _connect_read_only(path: Path, why: str) -> tuple[sqlite3.Connection, str]:
    """A read-only connection, and why it is read-only. A database in WAL mode needs its -shm
    file to be read, and SQLite creates that file beside the database: in a folder this process
    may not write (a read-only mount, another user's folder), it cannot, and the plain read-only
    open fails. Then the file is opened immutable: read as it is on disk, with no locks (nothing
    can write it from here; another process with write access could, unseen)."""
    uri = path.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn, why
    except sqlite3.OperationalError:
        conn.close()
    if Path(f"{path}-wal").exists():
        raise StoreError(f"{path} has unfinished writes in {path}-wal, and {why}, so SQLite "
                         "cannot read them; open it once where it may be written")
    return sqlite3.connect(f"{uri}?immutable=1", uri=True), f"{why}; {SNAPSHOT}"


@contextlib.contextmanager
def write_transaction(db: Database) -> Iterator[Database]:
    """One transaction that holds the write lock from its first statement to COMMIT.

    Inside an outer transaction it is a savepoint. SQLite's operational errors come out as
    StoreError (DatabaseBusy for a lock held too long), after a rollback.
    """
    if isinstance(db, AnalyzerDatabase):
        db.refuse_writes()
    if db.conn.in_transaction:
        with db.atomic():
            yield db
        return
    with sqlite_errors(db):
        _take_write_lock(db)
        try:
            if isinstance(db, AnalyzerDatabase):
                db.check_present()  # under the lock: a deleted file is never written
            yield db
            db.execute("COMMIT")
        except BaseException:
            if db.conn.in_transaction:
                db.conn.rollback()
            raise


def _take_write_lock(db: Database) -> None:
    """BEGIN IMMEDIATE: the write lock, waited for as the connection's `LockWait` says (with a
    budget, only what is left of it, and what the wait took is spent)."""
    wait = getattr(db, "lock_wait", None)
    if wait is None or wait.budget is None:
        db.execute("BEGIN IMMEDIATE")
        return
    with wait.budget.waiting() as left:
        db.conn.execute(f"PRAGMA busy_timeout = {int(left * 1000)}")
        db.execute("BEGIN IMMEDIATE")


@contextlib.contextmanager
def sqlite_errors(db: Database) -> Iterator[None]:
    """Turn SQLite's operational errors into StoreErrors that name the file and the cause."""
    path = getattr(db, "path", "the database")
    try:
        yield
    except sqlite3.OperationalError as error:
        name = getattr(error, "sqlite_errorname", "")
        if name.startswith("SQLITE_BUSY") or "locked" in str(error):
            wait = getattr(db, "lock_wait", None) or default_lock_wait()
            if wait.budget is not None:
                raise DatabaseBusy(f"{path} is locked by another process, and this request has "
                                   f"waited {wait.budget.seconds:g} s in all, as long as it "
                                   f"waits ({wait.set_by}); nothing was changed") from None
            raise DatabaseBusy(f"{path} is locked by another process, which kept its write lock "
                               f"for more than {wait.seconds:g} s ({wait.set_by}); nothing was "
                               "changed") from None
        if name.startswith("SQLITE_READONLY"):
            raise StoreError(f"{path} is read-only ({error}); nothing was changed") from None
        if name.startswith("SQLITE_FULL") or disk_is_full(Path(str(path))):
            raise DiskFull(full_disk_message(path, error)) from None
        raise StoreError(f"{path}: {error}") from None
    except sqlite3.DatabaseError as error:
        if disk_is_full(Path(str(path))):
            raise DiskFull(full_disk_message(path, error)) from None
        raise StoreError(f"{path} is damaged ({error})") from None


def full_disk_message(path, error: Exception) -> str:
    """What a full disk under the database means, in words (SQLite says "disk I/O error" or
    "database or disk is full", which reads like damage)."""
    free = shutil.disk_usage(Path(str(path)).resolve().parent).free
    return (f"the disk holding {path} is full ({free:,} bytes free; SQLite said: {error}). "
            "Free some space; nothing was changed")


def _close(conn: sqlite3.Connection | None) -> None:
    """Close a connection that will not be used (SQLite then removes the -wal and -shm files
    it made while looking)."""
    if conn is not None:
        with contextlib.suppress(sqlite3.Error):
            conn.close()


def _check_header(path: Path) -> None:
    """StoreError, naming what the file is, unless it is a SQLite database (or empty).

    Asked of SQLite itself, never by opening the file in Python: closing any descriptor of a
    file drops every POSIX lock this process holds on it, those of its open SQLite connections
    included ("How To Corrupt An SQLite Database File", 2.2). A process that kept a connection
    then saw another process delete the WAL files under it and missed later commits. The file's
    first bytes are read only once SQLite has refused it: then no connection here holds it.
    """
    try:
        probe = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60)
        try:
            probe.execute("PRAGMA schema_version").fetchone()
        finally:
            probe.close()
        return
    except sqlite3.OperationalError as error:
        if "locked" in str(error) or "busy" in str(error):
            return  # another process is writing it: a database, then
    except sqlite3.DatabaseError:
        pass  # not a database, or a damaged one: its first bytes say which
    try:
        with path.open("rb") as file:
            head = file.read(len(SQLITE_HEADER))
    except OSError as error:
        raise StoreError(f"{path}: cannot read ({error.strerror})") from None
    if head and head != SQLITE_HEADER:
        kind = "a text file" if _looks_like_text(head) else "not a SQLite database"
        raise StoreError(f"{path} is {kind}, not an analyzer database (it starts with "
                         f"{head[:8]!r}); nothing was changed. Pass {setting('db')} with the database file")


def _looks_like_text(head: bytes) -> bool:
    try:
        return head.decode("utf-8").isprintable() or "\n" in head.decode("utf-8")
    except UnicodeDecodeError:
        return False


def _why_read_only(path: Path) -> str | None:
    """Why this process may not write the database (or create it), or None."""
    folder = path.parent if str(path.parent) else Path(".")
    if path.exists() and not os.access(path, os.W_OK):
        return "no permission to write the file"
    # SQLite writes a journal (and in WAL mode -wal and -shm files) beside the database.
    if not os.access(folder, os.W_OK):
        return f"no permission to write in the folder {folder}"
    return None


def _check_ours(db: AnalyzerDatabase, tables: list[str]) -> None:
    """Refuse another program's database: it has tables and none of our migrations."""
    ours = migrations.applied(db) if "_sqlite_migrations" in tables else []
    other = sorted(t for t in tables if t != "_sqlite_migrations" and not t.startswith("sqlite_"))
    if other and not ours:
        shown = ", ".join(other[:5]) + (", ..." if len(other) > 5 else "")
        raise StoreError(f"{db.path} is a SQLite database of another program (tables: {shown}), "
                         "not an analyzer database; nothing was changed. Pass {setting:db} with another "
                         "file")


def _newer_schema(db: Database) -> str | None:
    known = {migration.name for migration in migrations.pending(Database(memory=True))}
    unknown = [m.name for m in migrations.applied(db) if m.name not in known]
    if not unknown:
        return None
    version = None
    if "meta" in db.table_names():
        row = db.execute("SELECT value FROM meta WHERE key = 'analyzer_version'").fetchone()
        version = row[0] if row else None
    return f"analyzer {version or 'of unknown version'}, schema {unknown[-1]}"


def _migrate(db: AnalyzerDatabase) -> None:
    """Apply pending migrations with foreign keys off (a migration that rebuilds a table must
    not cascade its DROP), then check that every reference still holds."""
    with sqlite_errors(db):
        if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            db.enable_wal()
        if not migrations.pending(db):
            return
        # Under the write lock, so two processes opening a new database do not both migrate.
        with write_transaction(db):
            migrations.apply(db)
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('analyzer_version', ?)",
                       [__version__])
            broken = db.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise StoreError(f"{db.path}: migrating would break references ({broken[:3]}); "
                                 "nothing was changed")
