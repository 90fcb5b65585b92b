"""`analyzer train`: a vocabulary from files, without a database."""

from __future__ import annotations

from pathlib import Path

import typer

from .. import bpe
from ..bpe.readable import readable
from ..bpe.reference import TIE_BREAKS
from ..files import not_regular
from ..settings import (
    MAX_SIZE,
    MAX_STORED_INT,
    MIN_SIZE,
)
from .app import Console, app, fail
from .formats import json_text, plain
from .help import HelpCommand
from .options import PRETOKENIZE_HELP, TieBreak


@app.command(cls=HelpCommand)
def train(
    files: list[Path] = typer.Argument(..., metavar="FILE", help="Text files; each line is one text.",
                                       exists=True, dir_okay=False, readable=True),
    vocab: int = typer.Option(512, "--vocab", "-v", help="Vocabulary size: 256 bytes + merges."),
    min_pair_count: int = typer.Option(bpe.MIN_PAIR_COUNT,
                                       help="Stop when the best pair occurs fewer times."),
    tie_break: TieBreak = typer.Option(TIE_BREAKS[0], help="How equal counts are ordered."),
    pretokenize: str = typer.Option("none", "--pretokenize", help=PRETOKENIZE_HELP),
    show: int = typer.Option(10, help="How many of the first merges to list."),
    as_json: bool = typer.Option(False, "--json", help="Print the merge list as JSON."),
) -> None:
    """Learn byte-level BPE merges on text files and show what they do to the text."""
    from ..corpus import read_lines
    from ..export import training_document
    from ..headroom import headroom
    from ..runs.memory import check_texts, ran_out
    from .progress import progress_bars
    from .tables import new_table

    if vocab < MIN_SIZE:
        raise fail(f"--vocab {vocab} is below {MIN_SIZE}, the byte alphabet")
    if vocab > MAX_SIZE:
        raise fail(f"--vocab {vocab} is above {MAX_SIZE:,}, the largest vocabulary the engine "
                    "trains")
    if not 1 <= min_pair_count <= MAX_STORED_INT:
        raise fail(f"--min-pair-count must be from 1 to {MAX_STORED_INT:,}, not {min_pair_count}")
    if show < 0:
        raise fail(f"--show must be 0 or more, not {show}")
    for path in files:  # a pipe would block, a device read without end: refused unopened
        if (why := not_regular(path)) is not None:
            raise fail(f"{path} is {why}, not a regular file of text")
    started = False
    try:
        per_file = [read_lines(path) for path in files]
        texts = [line for lines in per_file for line in lines]
        try:
            chunks, counts = bpe.distinct(texts, pretokenize)
        except ValueError as error:  # a pre-tokenizer refused, or (not from a file) a surrogate
            raise fail(str(error)) from None
        # Refused now, if it cannot fit, rather than stopped by a MemoryError halfway.
        check_texts(len(chunks), sum(len(chunk.encode("utf-8", "surrogateescape"))
                                      for chunk in chunks), vocab - MIN_SIZE, headroom())
        started = True
        with progress_bars(Console(stderr=True), disable=as_json) as bar:
            task = bar.add_task("merges", total=vocab - MIN_SIZE, merges=True)
            training = bpe.train_detailed(
                chunks, vocab, weights=counts, min_pair_count=min_pair_count,
                tie_break=tie_break.value,
                progress=lambda done, total: bar.update(task, completed=done),
            )
    except Exception as error:  # noqa: BLE001 - memory that ran out, said; anything else raised
        said = ran_out(error, headroom(), training=started, run=False)
        if said is None:
            raise
        raise fail(str(said), lines=True) from None
    if as_json:
        typer.echo(json_text(training_document(training)))
        return
    vocabulary = bpe.Vocabulary(training.merges, pretokenize)
    tokens = training.tokens_after(len(training.merges))
    console = Console()
    console.print(f"{len(texts)} texts, {training.n_bytes:,} bytes -> {tokens:,} tokens "
                  f"({training.n_bytes / max(tokens, 1):.2f} bytes per token) "
                  f"with {len(training.merges):,} merges")
    if training.stop_reason == "min_pair_count":
        console.print(f"[yellow]Stopped early at size {vocabulary.size}: no pair occurs "
                      f"{min_pair_count} times or more.[/yellow]")
    if len(files) > 1:
        totals = vocabulary.group_totals({str(i): lines for i, lines in enumerate(per_file)})
        table = new_table("file", "bytes", "tokens", "bytes/token",
                            f"tokens vs {plain(files[0].name)}",
                            title=f"Tokens per file under the shared vocabulary (size {vocabulary.size})")
        first_tokens = totals["0"][1]
        for index, path in enumerate(files):
            n_bytes, n_tokens = totals[str(index)]
            table.add_row(plain(path.name), f"{n_bytes:,}", f"{n_tokens:,}",
                          f"{n_bytes / max(n_tokens, 1):.2f}", f"{n_tokens / max(first_tokens, 1):.2f}x")
        console.print(table)
    table = new_table("rank", "id", "token", "count", title="First merges")
    for rank, (_, new_id) in enumerate(training.merges[:show]):
        table.add_row(str(rank), str(new_id), plain(readable(vocabulary.token_bytes(new_id))),
                      f"{training.counts[rank]:,}")
    if show > 0 and training.merges:
        console.print(table)
