"""The `analyzer` command: a thin Typer layer over the library."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from . import __version__, bpe

app = typer.Typer(
    help="Measure the tokenization tax: how many more tokens each language pays for the same meaning.",
    no_args_is_help=True,
    add_completion=False,
)


class TieBreak(str, Enum):
    lexicographic = "lexicographic"
    first = "first"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"analyzer {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", help="Show the version and exit.", callback=_print_version, is_eager=True
    ),
) -> None:
    """Measure the tokenization tax: how many more tokens each language pays for the same meaning."""


@app.command()
def train(
    files: list[Path] = typer.Argument(..., help="Text files; each line is one text.", exists=True,
                                       dir_okay=False, readable=True),
    vocab: int = typer.Option(512, "--vocab", "-v", help="Vocabulary size: 256 bytes + merges."),
    min_pair_count: int = typer.Option(2, help="Stop when the best pair occurs fewer times."),
    tie_break: TieBreak = typer.Option(TieBreak.lexicographic, help="How equal counts are ordered."),
    show: int = typer.Option(10, help="How many of the first merges to list."),
    as_json: bool = typer.Option(False, "--json", help="Print the merge list as JSON."),
) -> None:
    """Learn byte-level BPE merges on text files and show what they do to the text."""
    per_file = [_read_lines(path) for path in files]
    texts = [line for lines in per_file for line in lines]
    if vocab < 256:
        raise _fail(f"--vocab {vocab} is below 256, the byte alphabet")
    with Progress(*Progress.get_default_columns(), console=Console(stderr=True),
                  transient=True, disable=as_json) as bar:
        task = bar.add_task("training", total=vocab - 256)
        training = bpe.train_detailed(
            texts, vocab, min_pair_count=min_pair_count, tie_break=tie_break.value,
            progress=lambda done, total: bar.update(task, completed=done),
        )
    vocabulary = bpe.Vocabulary(training.merges)
    if as_json:
        merges = [{"rank": rank, "left": left, "right": right, "id": new_id,
                   "count": training.counts[rank],
                   "token": vocabulary.token_bytes(new_id).decode("utf-8", errors="backslashreplace")}
                  for rank, ((left, right), new_id) in enumerate(training.merges)]
        typer.echo(json.dumps({"vocab_size": vocabulary.size, "stop_reason": training.stop_reason,
                               "merges": merges}, ensure_ascii=False, indent=2))
        return
    tokens = training.tokens_after(len(training.merges))
    console = Console()
    console.print(f"{len(texts)} texts, {training.n_bytes:,} bytes -> {tokens:,} tokens "
                  f"({training.n_bytes / max(tokens, 1):.2f} bytes per token) "
                  f"with {len(training.merges):,} merges")
    if training.stop_reason == "min_pair_count":
        console.print(f"[yellow]Stopped early at size {vocabulary.size}: no pair occurs "
                      f"{min_pair_count} times or more.[/yellow]")
    if len(files) > 1:
        counts = vocabulary.count_tokens(texts, [vocabulary.size])[vocabulary.size]
        table = Table("file", "bytes", "tokens", "bytes/token", f"tokens vs {files[0].name}",
                      title=f"Tokens per file under the shared vocabulary (size {vocabulary.size})")
        first_tokens, offset = None, 0
        for path, lines in zip(files, per_file):
            n_bytes = sum(len(line.encode("utf-8")) for line in lines)
            n_tokens = sum(counts[offset:offset + len(lines)])
            offset += len(lines)
            first_tokens = first_tokens or n_tokens
            table.add_row(escape(path.name), f"{n_bytes:,}", f"{n_tokens:,}",
                          f"{n_bytes / max(n_tokens, 1):.2f}", f"{n_tokens / max(first_tokens, 1):.2f}x")
        console.print(table)
    table = Table("rank", "id", "token", "count", title="First merges")
    for rank, (_, new_id) in enumerate(training.merges[:show]):
        token = vocabulary.token_bytes(new_id).decode("utf-8", errors="backslashreplace")
        table.add_row(str(rank), str(new_id), escape(f"'{token}'"), f"{training.counts[rank]:,}")
    if show > 0 and training.merges:
        console.print(table)


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise _fail(f"{path}: not UTF-8 text (byte offset {error.start})") from None


def _fail(message: str) -> typer.Exit:
    Console(stderr=True).print(f"[red]Error:[/red] {escape(message)}")
    return typer.Exit(code=1)
