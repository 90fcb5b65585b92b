"""How the command line's help reads: Click's own formatter, not Rich's tables, so that at 80
columns nothing is cut off (no "…"), the help column is as wide as the terminal allows, square
brackets (`analyzer[serve]`) and percent signs show as written, and flags carry no metavar
noise (`<bool>`). A command's options are grouped under headings (`panel=` of an option,
kept as Typer's `rich_help_panel`), and the list of commands gives each command's first
sentence whole, on as many lines as it takes.
"""

from __future__ import annotations

from typing import Any

import typer.core

OTHER_OPTIONS = "Other options"
MAX_WIDTH = 120
"""The widest help is written (a wider terminal gets this)."""


class HelpCommand(typer.core.TyperCommand):
    """A command whose options are listed under their panels' headings, in order of first
    appearance (or `panel_order`'s); options without a panel last, under `OTHER_OPTIONS` (or
    `Options` when no option has a panel)."""

    panel_order: tuple[str, ...] = ()

    def format_options(self, ctx: Any, formatter: Any) -> None:
        panels: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            panel = getattr(param, "rich_help_panel", None)
            if isinstance(param, typer.core.TyperArgument):  # its name, not its Python type
                name = param.metavar or (param.name or "").upper()
                record = (name + ("..." if param.nargs != 1 else ""), record[1])
                panel = "Arguments"
            panels.setdefault(panel or "", []).append(record)
        named = sorted((name for name in panels if name), key=lambda name: (
            self.panel_order.index(name) if name in self.panel_order else len(self.panel_order)))
        grouped = [name for name in named if name != "Arguments"]  # options under headings
        for name in [*named, ""]:
            if name in panels:
                heading = name or (OTHER_OPTIONS if grouped else "Options")
                with formatter.section(heading):
                    formatter.write_dl(panels[name])


def first_sentence(text: str | None) -> str:
    """A docstring's first paragraph, its line breaks undone.

    >>> first_sentence("Write a run's report\\n(and the index).\\n\\nMore.")
    "Write a run's report (and the index)."
    """
    return " ".join((text or "").split("\n\n")[0].split())


class HelpGroup(typer.core.TyperGroup):
    """A group whose command list gives each command's first paragraph whole (Click cuts it at
    one line, with "..."), and whose options typed before a command are that command's:
    `analyzer sources --db a.db add NAME PATH` registers into a.db (Click kept the group's
    --db to the group, and `add` wrote into ./analyzer.db without a word). An option the
    command does not have is refused (exit 2), as it would be typed after it; one typed after
    it too is taken from there, as the last of an option given twice is."""

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[Any, Any, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is None:
            return name, command, rest
        given = [param for param in self.get_params(ctx) if isinstance(param, typer.core.TyperOption)
                 and getattr(ctx.get_parameter_source(param.name), "name", "") == "COMMANDLINE"]
        theirs = {param.name: param for param in command.get_params(ctx)}
        for param in given:
            if param.name not in theirs or theirs[param.name].opts != param.opts:
                ctx.fail(f"{param.opts[0]} is not an option of {name}; give it to the "
                         "command it is for")
        typed = [param.opts[0] if param.is_flag else f"{param.opts[0]}={ctx.params[param.name]}"
                 for param in given if not param.is_flag or ctx.params[param.name]]
        return name, command, [*typed, *rest]

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            rows.append((name, first_sentence(command.short_help or command.help)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
