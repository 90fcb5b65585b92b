"""Write the generated reference pages of the docs from the program itself:

- docs/reference/cli.md: every command and option, from the Typer application;
- docs/reference/catalog.md: every catalog tokenizer, from analyzer/external/catalog.toml;
- docs/reference/api.md: every endpoint of the service, from its OpenAPI document.

    python tools/reference.py          # writes the three pages
    python tools/reference.py --check  # exit 1 if a committed page is not what it would write

tests/test_docs.py fails when a committed page is stale."""

from __future__ import annotations

import html
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "reference"


def cli_page() -> str:
    """Typer's own Markdown of every command, its HTML escapes undone."""
    import typer
    from typer.cli import get_docs_for_click
    from typer.main import get_command

    from analyzer.cli import app

    command = get_command(app)
    text = get_docs_for_click(obj=command, ctx=typer.Context(command), name="analyzer")
    text = re.sub(r"^# `analyzer`", "# Commands and options\n\n`analyzer`", html.unescape(text),
                  count=1)
    return text.rstrip() + "\n"


def catalog_page() -> str:
    """The catalog as a table, and each tokenizer's files with their SHA-256."""
    from analyzer.external.catalog import catalog

    lines = ["# The catalog of production tokenizers", "",
             "Each is counted from files pinned by SHA-256, exactly as its own library counts "
             "it: the byte-level BPE ones by the analyzer's engine, equal to their libraries, "
             "the SentencePiece ones by sentencepiece (`analyzer tokenizers` says which counts "
             "each and where each resolves from on this machine; `analyzer tokenizers get NAME` "
             "fetches one). Framing: the tokens a one-message chat request adds.", "",
             "| name | family | models | format | tokens | framing |", "|---|---|---|---|---|---|"]
    for entry in catalog().values():
        framing = f"+{entry.framing.tokens} ({entry.framing.basis})" if entry.framing else "?"
        models = ", ".join(entry.models) + (f" ({entry.models_note})" if entry.models_note else "")
        lines.append(f"| `{entry.name}` | {entry.family} | {models} | {entry.format} | "
                     f"{entry.vocab_size:,} | {framing} |")
    for entry in catalog().values():
        lines += ["", f"## {entry.name}", ""]
        if entry.models_source:
            lines += [f"Models as listed by {entry.models_source} on {entry.models_date}.", ""]
        if entry.notes:
            lines += [entry.notes, ""]
        if entry.caveat:
            lines += [f"Caveat: {entry.caveat}", ""]
        lines += [f"- `{file.name}`: SHA-256 `{file.sha256}`" for file in entry.files]
    return "\n".join(lines) + "\n"


def api_page() -> str:
    """Every path and method of the service with its summary, from its OpenAPI document."""
    from analyzer.serve.app import create_app

    with tempfile.TemporaryDirectory() as scratch:
        schema = create_app(Path(scratch) / "reference.db").openapi()
    lines = ["# The JSON API", "", "`analyzer serve` answers these (its OpenAPI document is at "
             "`/openapi.json`); the pages and the playground are beside them.", "",
             "| method | path | what it does |", "|---|---|---|"]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            summary = " ".join((operation.get("summary") or operation.get("description")
                                or "").split("\n\n")[0].split())
            summary = summary.replace("|", "\\|")
            lines.append(f"| {method.upper()} | `{path}` | {summary} |")
    return "\n".join(lines) + "\n"


GENERATED: dict[str, Callable[[], str]] = {"cli.md": cli_page, "catalog.md": catalog_page,
                                           "api.md": api_page}


def stale() -> list[str]:
    """The pages whose committed text is not what they would be written as."""
    return [name for name, make in GENERATED.items()
            if not (PAGES / name).is_file() or (PAGES / name).read_text(encoding="utf-8") != make()]


if __name__ == "__main__":
    if "--check" in sys.argv:
        found = stale()
        print("stale: " + ", ".join(found) if found else "every generated page is current")
        sys.exit(1 if found else 0)
    for name, make in GENERATED.items():
        (PAGES / name).write_text(make(), encoding="utf-8")
        print(PAGES / name)
