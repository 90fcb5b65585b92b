"""The `analyzer` command group and the one place where errors become what a terminal shows;
the console script (`main`)."""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import resource
import signal
import sqlite3
import sys
import tempfile
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich import console as rich_console

from ..errors import AnalyzerError
from ..files import write_atomically
from ..interrupts import EXIT_INTERRUPTED, interrupt_handler, interrupted, keep_interrupts
from .formats import fold_words, plain
from .help import MAX_WIDTH, HelpGroup
from .options import flag

if TYPE_CHECKING:
    from ..store import AnalyzerDatabase

WORK_ORDER = ("ingest", "corpora", "corpus", "sources", "tokenizers", "run", "runs", "show",
              "report", "results", "merges", "tokenize", "export", "serve", "recover", "train")
"""`analyzer --help` lists the commands as a user meets them: bring text, measure, read the
results, then the rest."""


class Commands(HelpGroup):
    """The command group, and the one place where errors become what a terminal shows: an
    `AnalyzerError` (the input's or the situation's) is its message, with settings named by
    their flags, and exit 1; so is an SQLite error that got this far (a database damaged past
    its first page). Ctrl-C and SIGTERM stop any command with a word and exit 130 (`run` says
    more: which run it marked); a reader that closes the pipe (`| head`) just ends it, exit 0.
    Anything else is a bug, said by `main`."""

    def list_commands(self, ctx) -> list[str]:
        """The commands in the order of the work (`WORK_ORDER`), any other after them."""
        names = super().list_commands(ctx)
        return sorted(names, key=lambda name: (WORK_ORDER.index(name) if name in WORK_ORDER
                                               else len(WORK_ORDER)))

    def main(self, *args, **kwargs):
        forgiving_output()
        return super().main(*args, **kwargs)

    def invoke(self, ctx):
        keep_interrupts()  # an interrupt that lands in a finalizer is delivered again
        previous = signal.signal(signal.SIGTERM, interrupt_handler())
        try:
            return super().invoke(ctx)
        except AnalyzerError as error:
            raise fail(error.render(flag), lines=error.lines) from None
        except sqlite3.DatabaseError as error:
            raise fail(f"the database could not be read or written ({error}); nothing was "
                        "changed") from None
        except KeyboardInterrupt as error:
            Console(stderr=True).print(plain(interrupted(error)))
            raise typer.Exit(code=EXIT_INTERRUPTED) from None
        except BrokenPipeError:
            _quiet_stdout()
            raise typer.Exit(code=0) from None
        except OSError as error:  # after BrokenPipeError, one of them
            if error.errno != errno.ENAMETOOLONG:
                raise
            raise fail(f"{error.filename or 'a path'}: a name longer than this system allows "
                       "(255 bytes a name, 4,096 a path, on most); nothing was changed") from None
        finally:
            signal.signal(signal.SIGTERM, previous)


def _quiet_stdout() -> None:
    """After the reader of standard output has gone: send what is left (Python's own flush at
    exit included) nowhere, so that nothing complains about the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    with contextlib.suppress(OSError):
        os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


UNWRITABLE = "analyzer-escape"
"""The error handler of standard output and error (`forgiving_output`): a character their
encoding lacks is written as an escape (`\\u2615`), a byte of a name that was not UTF-8 (a
lone surrogate, as Python reads such a name) as `\\xff`."""


def _escape(error: UnicodeError) -> tuple[str, int]:
    assert isinstance(error, UnicodeEncodeError)
    text = error.object[error.start:error.end]
    return "".join(f"\\x{ord(char) - 0xDC00:02x}" if 0xDC80 <= ord(char) <= 0xDCFF
                   else char.encode("ascii", "backslashreplace").decode("ascii")
                   for char in text), error.end


codecs.register_error(UNWRITABLE, _escape)


def forgiving_output() -> None:
    """Standard output and error that write every character, whatever their encoding
    (PYTHONIOENCODING=ascii or latin-1, a C locale): what the encoding lacks is written as an
    escape (`UNWRITABLE`), not a UnicodeEncodeError. A stream given its own error handler
    (PYTHONIOENCODING=latin-1:replace) keeps it.

    >>> "café ☕ \\udcff".encode("ascii", UNWRITABLE)
    b'caf\\\\xe9 \\\\u2615 \\\\xff'
    """
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) in ("strict", "surrogateescape", "backslashreplace"):
            with contextlib.suppress(AttributeError, ValueError, OSError):  # not a TextIOWrapper
                stream.reconfigure(errors=UNWRITABLE)  # type: ignore[union-attr]


class Console(rich_console.Console):
    """rich's Console, with four changes. On standard output, a line of text is folded
    between words to the width (the terminal's, or 80 columns in a pipe: `fold_words`), and
    never inside one: rich would cut a path, a URL or a name in two. Anything else (a table),
    and every message on standard error (one line each, whole, for a log or a program to
    read; a terminal wraps it), is printed whole (soft wrap): rich would crop it, or fold a
    name in a cell. It never reads `:name:` as an emoji's code (a corpus called `:smile:` is
    printed as its name). And when the reader closes the pipe (`analyzer show 1 | head`) the
    command ends as `Commands` ends it (exit 0), not with rich's exit 1."""

    def __init__(self, *args, soft_wrap: bool = True, emoji: bool = False, **kwargs) -> None:
        super().__init__(*args, soft_wrap=soft_wrap, emoji=emoji, **kwargs)
        if self._width is not None and self._width < 1:  # COLUMNS=0: no width, not none at all
            self._width = None  # (rich printed nothing); as unset: the terminal's, or 80

    def print(self, *objects: Any, **options: Any) -> None:
        if not self.stderr and objects and all(isinstance(item, str) for item in objects):
            text = self.render_str(options.pop("sep", " ").join(objects),
                                   **{key: options.pop(key) for key in ("markup", "highlight",
                                                                        "emoji") if key in options})
            objects = (fold_words(text, self.width),)
        super().print(*objects, **options)

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


app = typer.Typer(
    cls=Commands,
    help="Measure the tokenization tax: how many more tokens each language pays for the same meaning.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,  # `main` turns an unexpected error into a short message
    rich_markup_mode=None,  # help by Click's formatter: see analyzer.cli_help
    context_settings={"max_content_width": MAX_WIDTH},
)


EXIT_INPUT = 1
"""Bad input or settings, or a situation (a locked or full disk): a message says which."""


EXIT_USAGE = 2
"""A command line Click could not parse (an unknown option, a bad choice, a run id like abc)."""


EXIT_BUG = 70
"""An unexpected error, a bug of analyzer's (EX_SOFTWARE in sysexits.h)."""


FULL_DISK = {errno.ENOSPC, errno.EDQUOT}


def main() -> None:
    """The console script: the app, with any unexpected error said in one line (the
    traceback goes to a file, for a bug report) instead of a traceback on the terminal."""
    try:
        app(prog_name="analyzer")
    except OSError as error:
        if error.errno not in FULL_DISK:
            report_bug(error)
        where = f" {error.filename}" if error.filename else " the output"
        Console(stderr=True).print(
            f"[red]Error:[/red] cannot write{plain(where)}: the disk is full ({plain(error.strerror)}); "
            "free some space and run the command again")
        sys.exit(EXIT_INPUT)
    except Exception as error:  # noqa: BLE001 - the last resort, by design
        said = out_of_memory(error)
        if said is not None:  # the environment's limit, not a bug
            try:
                Console(stderr=True).print(f"[red]Error:[/red] {said}")
            except (MemoryError, SystemError):  # too short of memory even for rich's markup
                sys.stderr.write(f"Error: {said}\n")
            sys.exit(EXIT_INPUT)
        report_bug(error)
    except BaseException as error:  # a library's Rust panic is not an Exception
        if type(error).__name__ != "PanicException":  # pyo3's: tiktoken's, tokenizers'
            raise
        Console(stderr=True).print(
            f"[red]Error:[/red] a tokenizer's library failed on this input (its Rust code "
            f"panicked: {plain(str(error))}); the command stopped there")
        sys.exit(EXIT_INPUT)


def out_of_memory(error: BaseException) -> str | None:
    """Memory that ran out, wherever in a command (a MemoryError, a thread that could not
    start), said in words with the limit that bounds the process, escaped for the terminal;
    None for any other error."""
    try:
        from ..headroom import headroom
        from ..runs.memory import ran_out

        try:
            room = headroom()
        except AnalyzerError:  # a bad ANALYZER_MEMORY: the limit goes unsaid
            room = None
        said = ran_out(error, room, training=None)
    except (MemoryError, ImportError, OSError):  # too short of memory to say more, or to load
        # what says it (an import's own `OSError: [Errno 12] Cannot allocate memory`)
        if isinstance(error, MemoryError) or getattr(error, "errno", None) == errno.ENOMEM \
                or "failed to map segment" in str(error):  # the loader, under `ulimit -v`
            what = type(error).__name__ + (f": {error}" if str(error) else "")
            soft = resource.getrlimit(resource.RLIMIT_AS)[0]
            under = "" if soft == resource.RLIM_INFINITY else \
                f", under the address-space limit (ulimit -v {soft // 1024})"
            return f"The command ran out of memory ({plain(what)}){under}. Give it more memory."
        return None
    return None if said is None else "\n".join(map(plain, str(said).split("\n")))


def report_bug(error: BaseException) -> NoReturn:
    """Say an unexpected error in one line, with its traceback in a file; exit EXIT_BUG."""
    from ..version import __version__

    where = ""
    with contextlib.suppress(OSError):
        with tempfile.NamedTemporaryFile("w", prefix="analyzer-error-", suffix=".txt",
                                         delete=False) as file:
            traceback.print_exc(file=file)
        where = f"; the details are in {file.name}"
    Console(stderr=True).print(
        f"[red]Error:[/red] {plain(type(error).__name__)}: {plain(error)}. This is a bug in "
        f"analyzer {__version__}, not in your input{plain(where)}")
    sys.exit(EXIT_BUG)


def _print_version(value: bool) -> None:
    if value:
        from .. import bpe
        from ..version import __version__

        typer.echo(f"analyzer {__version__} ({bpe.ENGINE} BPE engine)")
        raise typer.Exit()


@app.callback()
def callback(
    version: bool = typer.Option(
        False, "--version", help="Show the version and exit.", callback=_print_version, is_eager=True
    ),
) -> None:
    """Measure the tokenization tax: how many more tokens each language pays for the same meaning."""


def fail(message: str, lines: bool = False) -> typer.Exit:
    """Say an error (`lines`: its line breaks kept, each line escaped on its own) and return
    the exit to raise."""
    said = "\n".join(map(plain, message.split("\n"))) if lines else plain(message)
    Console(stderr=True).print(f"[red]Error:[/red] {said}")
    return typer.Exit(code=EXIT_INPUT)


@contextlib.contextmanager
def writing(out: Path) -> Iterator[None]:
    """A file or folder that cannot be written is a message naming it, not a traceback."""
    try:
        yield
    except OSError as error:
        full = "the disk is full, " if error.errno in FULL_DISK else ""
        raise fail(f"--out {out}: cannot write ({full}{error.strerror or error}); nothing "
                    "was replaced") from None


def emit(content: str | Iterable[str], out: Path | None) -> None:
    """A document to standard output as it is made, or to `out` atomically (saying so): the
    same bytes either way (Click would take what looks like a terminal's colour codes out of
    a text, `\x1b[2J`, when standard output is not a terminal)."""
    if out is None:
        for piece in [content] if isinstance(content, str) else content:
            typer.echo(piece, nl=False, color=True)
        return
    with writing(out):
        write_atomically(out, content)
    Console(stderr=True).print(f"Wrote {plain(out)}")


def open_database(db: Path) -> AnalyzerDatabase:
    """The database of a command that needs one to exist already."""
    from ..store import open_db  # here, not above: a command's --help loads no database code

    return open_db(db, create=False)

