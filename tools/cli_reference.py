"""Print the command reference of the Typer application as Markdown (docs/reference/cli.md):

    python tools/cli_reference.py > docs/reference/cli.md

tests/test_docs.py fails when the committed file is not what this prints."""

from __future__ import annotations

import html
import re

import typer
from typer.cli import get_docs_for_click
from typer.main import get_command

from analyzer.cli import app

TITLE = "Commands and options"


def reference() -> str:
    """The reference: Typer's own Markdown of every command, with its HTML escapes undone and
    the program named `analyzer`."""
    command = get_command(app)
    text = get_docs_for_click(obj=command, ctx=typer.Context(command), name="analyzer")
    text = html.unescape(text)
    text = re.sub(r"^# `analyzer`", f"# {TITLE}\n\n`analyzer`", text, count=1)
    return text.rstrip() + "\n"


if __name__ == "__main__":
    print(reference(), end="")
