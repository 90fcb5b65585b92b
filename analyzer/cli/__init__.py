"""The `analyzer` command: a thin Typer layer over the library, a module per group of commands.

`app` is the command group (`analyzer.cli.app`, with its error handling, and the order
`analyzer --help` lists the commands in: `WORK_ORDER`); each module below registers its
commands on it as it is imported.
"""

from .app import app, main

# isort: off
from . import train, corpora, runs, reading, serve, sources, tokenizers  # noqa: F401
# isort: on

__all__ = ["app", "main"]
