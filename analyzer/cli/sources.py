"""Training sources: `sources`, `sources add`, `show`, `remove`, `clear-cache`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import Progress, TransferSpeedColumn

from ..corpus.hub import hub_spec, is_hub_spec
from ..corpus.hub_sources import DEFAULT_SPLIT, HubRequest, fetch_hub_source, hub_origin_said
from ..corpus.sources import find_source_files, scan_files
from ..corpus.streams import DEFAULT_TEXT_FIELD, DOCUMENT_KINDS
from ..runs.chunk_cache import CacheInUse, ChunkCache
from ..store import (
    StoreError,
    check_corpus_name,
    get_source,
    list_sources,
    open_db,
    remove_source,
    save_source,
)
from .app import Console, app, fail, open_database
from .formats import json_text, plain
from .help import HelpCommand, HelpGroup
from .options import DbOption, JsonOption, flag
from .parsing import parse_bytes, split_commas
from .tables import new_table, source_languages_table

sources_app = typer.Typer(no_args_is_help=False, cls=HelpGroup, rich_markup_mode=None)
app.add_typer(sources_app, name="sources")


@sources_app.callback(invoke_without_command=True)
def sources(ctx: typer.Context, db: Path = DbOption, as_json: bool = JsonOption) -> None:
    """Training sources: monolingual text per language that runs can train on (run
    --train-on NAME), registered where it lies, never copied."""
    if ctx.invoked_subcommand is not None:
        return
    found = list_sources(open_database(db))
    if as_json:
        typer.echo(json_text(found))
        return
    if not found:
        Console().print("No training sources yet: analyzer sources add NAME PATH...")
        return
    table = new_table("name", "languages", "files", "bytes", "documents", "registered")
    for item in found:
        table.add_row(plain(item.name), str(len(item.languages)), f"{item.files:,}",
                      f"{item.bytes:,}", f"{item.document_count:,}", item.created)
    Console().print(table)


@sources_app.command("add", cls=HelpCommand)
def sources_add(
    name: str = typer.Argument(..., metavar="NAME",
                               help="The name runs will train on it by (--train-on NAME)."),
    paths: list[Path] = typer.Argument(..., metavar="PATH", help="Files named <lang>.<ext>, folders of "
                                       "them, or folders of <lang>/ folders of shards; or a "
                                       "Hugging Face dataset of Parquet shards per language, "
                                       "hf:ORG/NAME[@REVISION] (FineWeb-2's or CulturaX's "
                                       "layout; needs analyzer[tokenizers])."),
    documents: str = typer.Option("lines", help="Plain text files: a document per line, or "
                                  "per blank-line-separated paragraph (paragraphs)."),
    text_field: str = typer.Option(DEFAULT_TEXT_FIELD, help="JSON Lines' field, or Parquet's "
                                   "column, holding the text."),
    format: str = typer.Option(None, "--format", help="text, jsonl or parquet (default: told "
                               "by each file's content and name)."),
    replace: bool = typer.Option(False, "--replace", help="Register again a source of this name."),
    languages: list[str] = typer.Option(
        None, "--languages", metavar="LANGS", help="hf: only. The languages to fetch (configs "
        "named by them: rus_Cyrl, ru), comma-separated or repeated."),
    config: list[str] = typer.Option(
        None, "--config", metavar="CONFIGS", help="hf: only. Configs to fetch by name (e.g. "
        "rus_Cyrl_removed), comma-separated or repeated."),
    split: str = typer.Option(None, "--split", metavar="SPLIT", help="hf: only. The split to "
                              "fetch (default: train)."),
    bytes_per_language: str = typer.Option(
        None, "--bytes-per-language", metavar="BYTES", help="hf: only. Fetch a language's "
        "shards in order until their size (compressed Parquet, not text) reaches this (2G, "
        "500M; default: all)."),
    db: Path = DbOption,
) -> None:
    """Register monolingual training text: each file is read once (its SHA-256, its documents
    and their bytes) and stays where it is. A hf: dataset's shards are fetched first, at one
    commit, into the Hugging Face cache."""
    if documents not in DOCUMENT_KINDS:
        raise fail(f"--documents must be lines or paragraphs, not {documents!r}")
    try:  # before any file is read; the name is this command's argument, not a --name
        check_corpus_name(name, what="source")
    except StoreError as error:
        raise fail(error.render(lambda s: "the NAME argument" if s == "name" else flag(s))
                    ) from None
    hub = [str(path) for path in paths if is_hub_spec(path)]
    asked = {"--languages": languages, "--config": config, "--split": split,
             "--bytes-per-language": bytes_per_language}
    origin = None
    if hub:
        if len(paths) > 1:
            raise fail(f"{hub[0]} is a source of its own: give it alone, not with other paths")
        if format not in (None, "parquet"):
            raise fail(f"--format {format}: a Hugging Face source is Parquet shards")
        fetched = fetch_hub_source(HubRequest(
            _pinned(db, name, hub[0], replace), configs=split_commas(config),
            languages=split_commas(languages), split=split or DEFAULT_SPLIT,
            budget=parse_bytes(bytes_per_language, "--bytes-per-language"),
            known=_known_shards(db, name, hub[0])))
        files, origin = fetched.files, fetched.origin
        for note in fetched.notes:
            Console(stderr=True).print(f"[yellow]Note:[/yellow] {plain(note)}")
    else:
        if (given := [name for name, value in asked.items() if value]):
            raise fail(f"{', '.join(given)}: for a Hugging Face source (hf:ORG/NAME) only")
        files = find_source_files(paths, format)
    database = open_db(db, create=True)
    console = Console(stderr=True)
    total = sum(item.size for item in files)
    with Progress(*Progress.get_default_columns(), TransferSpeedColumn(), console=console,
                  transient=True) as bars:
        task = bars.add_task(f"reading {len(files):,} files", total=total)
        scanned = scan_files(files, documents=documents, text_field=text_field,
                             progress=lambda n: bars.advance(task, n))
    status = save_source(database, name, scanned, documents=documents, text_field=text_field,
                         replace=replace, origin=origin)
    detail = get_source(database, name)
    out = Console()
    if detail.origin is not None:
        out.print(hub_origin_said(detail.origin, detail.file_list[0].path))
    if status == "unchanged":
        out.print(f"Source {plain(repr(name))} is already registered with these files; nothing "
                  "to do.")
    else:
        out.print(f"{status.capitalize()} source {plain(repr(name))}: {len(detail.languages)} "
                  f"languages, {detail.files:,} files, {detail.bytes:,} bytes, "
                  f"{detail.document_count:,} documents")
    out.print(source_languages_table(detail))
    for item in detail.file_list:
        if item.problem:
            unread = (f"{item.invalid_documents:,} documents could not be read; "
                      if item.invalid_documents else "")  # a broken stream: none counted
            out.print(f"[yellow]Note:[/yellow] {plain(item.problem)} ({unread}runs refuse the "
                      "file unless --skip-invalid, which uses what could be read)")


def _pinned(db: Path, name: str, spec: str, replace: bool) -> str:
    """What to fetch: a source of this name from elsewhere is refused before gigabytes are
    fetched for nothing; one from the same dataset is fetched again at the commit recorded with
    it (unless a revision is named, or --replace asks for the dataset as it is now), so that
    adding it again gives the same shards (`save_source` then finds it unchanged)."""
    if replace or not db.exists():
        return spec
    existing = next((item for item in list_sources(open_database(db)) if item.name == name), None)
    if existing is None:
        return spec
    repo, revision = hub_spec(spec)
    if (existing.origin or {}).get("hub") != repo:
        raise fail(f"a source named {name!r} is already registered, with other files; pass "
                   "--replace to register it again, or choose another name")
    if revision is not None:
        return spec
    assert existing.origin is not None
    commit = existing.origin["revision"]
    Console(stderr=True).print(f"[yellow]Note:[/yellow] {plain(repr(name))} was fetched at "
                               f"revision {commit}: that one is fetched again (--replace takes "
                               "the dataset as it is now)")
    return f"{spec}@{commit}"


def _known_shards(db: Path, name: str, spec: str) -> dict[str, dict[str, int]]:
    """The shards of the dataset registered under `name` (`HubRequest.known`), by commit:
    `{commit: {path in the repository: size}}`; none when no source of the dataset is."""
    if not db.exists():
        return {}
    existing = next((item for item in list_sources(open_database(db)) if item.name == name), None)
    origin = existing.origin if existing is not None else None
    if origin is None or origin.get("hub") != hub_spec(spec)[0]:
        return {}
    marker = f"/snapshots/{origin['revision']}/"
    files = get_source(open_database(db), name).file_list
    return {origin["revision"]: {item.path.split(marker, 1)[1]: item.size
                                 for item in files if marker in item.path}}


@sources_app.command("show", cls=HelpCommand)
def sources_show(name: str = typer.Argument(..., metavar="NAME", help="The source's name."),
                 db: Path = DbOption, as_json: bool = JsonOption) -> None:
    """One source: its languages and files, and its chunk counts kept in the cache."""
    database = open_database(db)
    detail = get_source(database, name)
    cache = ChunkCache.beside(database.path)
    entries = [entry for entry in cache.entries()
               if entry.about.get("fingerprint") == detail.fingerprint]
    if as_json:
        document = detail.model_dump(mode="json")
        document["cache"] = [{"path": str(entry.path), "bytes": entry.size, **entry.about}
                             for entry in entries]
        typer.echo(json_text(document))
        return
    console = Console()
    console.print(f"{plain(detail.name)}: {len(detail.languages)} languages, {detail.files:,} "
                  f"files, {detail.bytes:,} bytes, {detail.document_count:,} documents "
                  f"({detail.documents}; text field {plain(detail.text_field)}); registered "
                  f"{detail.created}; fingerprint {detail.fingerprint[:16]}")
    if detail.origin is not None:
        console.print(hub_origin_said(detail.origin, detail.file_list[0].path))
    console.print(source_languages_table(detail))
    console.print(f"Chunk counts in the cache: {len(entries)} entries, "
                  f"{sum(entry.size for entry in entries):,} bytes in {plain(cache.folder)}"
                  + (" (analyzer sources clear-cache empties it)" if entries else ""))


@sources_app.command("remove", cls=HelpCommand)
def sources_remove(name: str = typer.Argument(..., metavar="NAME", help="The source's name."),
                   db: Path = DbOption) -> None:
    """Forget a source (its files stay where they are; runs trained on it keep what they
    recorded) and its chunk counts in the cache."""
    database = open_database(db)
    detail = get_source(database, name)
    remove_source(database, name)
    try:
        removed, size = ChunkCache.beside(database.path).clear(detail.fingerprint)
    except CacheInUse:  # its entries stay until cleared: nothing uses them after this run
        Console().print(f"Removed source {plain(repr(name))}. Its cached chunk counts stay for "
                        "now: a run is using the cache (analyzer sources clear-cache removes "
                        "them once it has ended).")
        return
    Console().print(f"Removed source {plain(repr(name))} (and {removed} cached chunk counts, "
                    f"{size:,} bytes).")


@sources_app.command("clear-cache", cls=HelpCommand)
def sources_clear_cache(name: str = typer.Argument(None, metavar="NAME", help="Only this source's (default: "
                                                   "all)."), db: Path = DbOption) -> None:
    """Empty the chunk-count cache (runs count their sample again)."""
    database = open_database(db)
    fingerprint = get_source(database, name).fingerprint if name is not None else None
    removed, size = ChunkCache.beside(database.path).clear(fingerprint)
    Console().print(f"Removed {removed} cached chunk counts ({size:,} bytes).")
