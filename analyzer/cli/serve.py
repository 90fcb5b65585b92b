"""`analyzer serve`: the service (the optional extra `analyzer[serve]`)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..limits import (
    DEFAULT_BODY_LIMIT,
    DEFAULT_CORPUS_LIMIT,
    DEFAULT_COUNTING_PROCESSES,
    DEFAULT_LOCK_WAIT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_QUEUE,
    DEFAULT_UPLOAD_SPACE,
    MIN_BODY_RATE,
    REQUEST_TIMEOUT,
)
from ..store import open_db
from .app import EXIT_INTERRUPTED, Console, app, fail
from .help import HelpCommand
from .options import DbOption, LogFormat


@app.command(cls=HelpCommand)
def serve(
    host: str = typer.Option("127.0.0.1", help="The address to listen on. Any other than "
                             "loopback needs --token."),
    port: int = typer.Option(8000, min=0, max=65535, help="The port (0: any free one)."),
    token: str = typer.Option(None, envvar="ANALYZER_TOKEN", show_envvar=True,
                              help="Every request must then send Authorization: Bearer TOKEN."),
    max_body: int = typer.Option(DEFAULT_BODY_LIMIT, min=1, help="The largest request body, in bytes "
                                 "(larger ones get 413)."),
    allow_host: list[str] = typer.Option(
        None, "--allow-host", metavar="NAME", help="Also answer requests that name this host "
        "(repeatable): the name users reach the server by, beyond its address (and, on "
        "loopback, localhost). Other names are refused, against DNS rebinding."),
    max_connections: int = typer.Option(DEFAULT_MAX_CONNECTIONS, min=1, max=100_000, help="Connections held "
                                        "open at once; one more gets 503."),
    count_processes: int = typer.Option(None, min=1, max=256, help="Requests that count long "
                                        "texts (tokenize, compare) at once, each in a process "
                                        "of its own; more get 503 with Retry-After (default: "
                                        "the cores, at least 2)."),
    log_format: LogFormat = typer.Option("text", help="A line per request on stderr: text, "
                                         "json (one object a line, for a log collector: then "
                                         "every line on stderr is JSON) or none. Paths only: no "
                                         "query, no header."),
    max_queue: int = typer.Option(DEFAULT_MAX_QUEUE, min=0, max=10_000, help="Runs that may wait their turn "
                                  "behind the one in progress; one more gets 503 with "
                                  "Retry-After."),
    max_corpus_bytes: int = typer.Option(DEFAULT_CORPUS_LIMIT, min=1, help="The largest corpus a "
                                         "browser or client may upload, in bytes, as sent and "
                                         "(a zip) unpacked; larger ones get 413 or 422."),
    max_upload_space: int = typer.Option(DEFAULT_UPLOAD_SPACE, min=1, help="Bytes of temporary disk "
                                         "the uploads being read may take together (each may "
                                         "take its size twice, plus --max-corpus-bytes for a "
                                         "zip's files); one more gets 503 before it is read."),
    lock_wait: float = typer.Option(DEFAULT_LOCK_WAIT, min=0, max=3600, help="Seconds a request waits, in "
                                    "all: for another process's write lock on the database (an "
                                    "analyzer run, ingest), for a thread to write on, for a run "
                                    "it interrupts to end; then it gets 503 with Retry-After, "
                                    "having changed nothing (an interrupt: 202, stopping)."),
    request_timeout: float = typer.Option(REQUEST_TIMEOUT, min=0.1, max=3600, help="Seconds a client may "
                                          "take to send a request's headers, or stay idle "
                                          "between requests; also the window over which a "
                                          "body's rate is measured."),
    min_body_rate: int = typer.Option(MIN_BODY_RATE, min=1, help="Bytes a second a request's body "
                                      "(an upload) must average over each --request-timeout "
                                      "window; a slower one is cut off with 408."),
    db: Path = DbOption,
) -> None:
    """Serve the runs, the JSON API, the pages (bring a corpus, start and watch runs, read
    their reports) and the playground (pip install 'analyzer[serve]')."""
    try:
        from ..serve import ServeError
        from ..serve import serve as run_server
        from ..serve.logs import use_json_stderr
        from ..serve.workflow import NEW_CORPUS_PAGE
    except ImportError as error:
        raise fail(f"analyzer serve needs FastAPI and uvicorn ({error.name} is missing): "
                    "pip install 'analyzer[serve]'") from None
    if log_format.value == "json":  # from the first line: every line on stderr is JSON
        use_json_stderr()
    console = Console(stderr=True)
    def listening() -> None:  # the address is held: a busy port was refused before this
        new = not db.exists()
        open_db(db)  # made when new; a database that cannot be used is said here
        if new:
            console.print(f"A new, empty database: {db}. Bring a corpus from the page, which "
                          f"uploads one (at {NEW_CORPUS_PAGE} on the address below), or from a "
                          f"terminal: analyzer ingest FOLDER --db {db}", soft_wrap=True,
                          markup=False)

    try:
        run_server(db, host, port, token=token, body_limit=max_body, allow_hosts=allow_host or [],
                   max_connections=max_connections,
                   counting_processes=count_processes or DEFAULT_COUNTING_PROCESSES,
                   log_format=log_format.value, max_queue=max_queue,
                   corpus_limit=max_corpus_bytes, upload_space=max_upload_space,
                   lock_wait=lock_wait, request_timeout=request_timeout,
                   min_body_rate=min_body_rate,
                   announce=lambda line: console.print(line, soft_wrap=True, markup=False),
                   listening=listening)
    except ServeError as error:
        raise fail(str(error)) from None
    except KeyboardInterrupt as error:  # Ctrl-C or SIGTERM: a stop, not a loss
        why = f" ({error.args[0]})" if error.args else ""
        console.print(f"Stopped{why}. Everything stored is kept; a run that was in progress is "
                      "marked interrupted and can be started again.", soft_wrap=True, markup=False)
        raise typer.Exit(code=EXIT_INTERRUPTED) from None
