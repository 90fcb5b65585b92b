"""Every command's `--help` read at 80 and 120 columns, as a terminal shows it: nothing cut off,
no line past the width, the extras' names (`analyzer[serve]`) and percent signs as written,
no metavar noise, `run`'s options under their headings, the command list one entry per
command with its first sentence whole."""

from __future__ import annotations

import re

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from analyzer.cli import app
from analyzer.cli.options import RUN_PANELS


def every_command() -> list[list[str]]:
    group = get_command(app)
    found: list[list[str]] = [[]]
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        found.append([name])
        for sub in getattr(command, "commands", {}):
            found.append([name, sub])
    return found


def help_text(args: list[str], width: int) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], terminal_width=width)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("args", every_command(), ids=lambda args: " ".join(args) or "analyzer")
def test_help_fits_and_nothing_is_cut_off(args, width):
    text = help_text(args, width)
    lines = text.splitlines()
    assert max(map(len, lines)) <= width
    assert "…" not in text and "%%" not in text
    cut = [line for line in lines if line.rstrip().endswith("...")
           and not re.search(r"[A-Z]+\]?\}?\.\.\.$", line.rstrip())]  # FILE... takes several
    assert cut == []
    assert "<bool>" not in text and "<list[" not in text


def test_the_extras_and_the_headings_show_as_written():
    assert "pip install 'analyzer[serve]'" in " ".join(help_text(["serve"], 80).split())
    run = help_text(["run"], 80)
    assert "analyzer[tokenizers]" in " ".join(run.split())
    headings = [line[:-1] for line in run.splitlines() if re.fullmatch(r"[A-Z][\w ,]+:", line)]
    assert headings == [*RUN_PANELS, "Output", "Other options"]
    assert "within 10 percent of the pivot (1.10)" in " ".join(help_text(["run"], 120).split())


def test_the_command_list_gives_each_command_its_first_sentence_whole():
    text = help_text([], 80)
    words = " ".join(text.split())
    assert "how many more tokens each language pays for the same meaning." in words
    assert "report Write a run's HTML report (and the index of runs); it works offline." in words
    commands = re.findall(r"^  ([a-z-]+) ", text.split("Commands:")[1], re.M)
    group = get_command(app)
    assert sorted(commands) == sorted(group.commands)  # type: ignore[attr-defined]
    assert commands == group.list_commands(None)  # type: ignore[attr-defined]  # the work's order


def test_run_has_one_option_per_setting_from_one_table():
    """Issue 53: `run`'s options are made from one table (RUN_OPTIONS), a row per setting of
    RunSettings (`added` comes with --vocab's +N), and RunSettings is made from them in one
    place (`run_settings`), each setting not given left to its definition's default."""
    import inspect

    from analyzer.cli.runs import RUN_OPTIONS, run, run_settings
    from analyzer.settings import RunSettings, setting_names

    rows = [row.setting for row in RUN_OPTIONS]
    assert len(rows) == len(set(rows))
    assert set(rows) == set(setting_names()) - {"added"}
    parameters = list(inspect.signature(run).parameters)
    assert parameters[:len(rows)] == rows
    assert parameters[len(rows):] == ["report", "open_report", "out", "output", "intervals",
                                      "as_json", "db"]
    untouched = {row.setting: (False if row.typed is bool else None) for row in RUN_OPTIONS}
    untouched["sizes"] = ["512"]
    assert run_settings(untouched) == RunSettings(sizes=[512], per_language=False, cross=False,
                                                  parity=False,
                                                  skip_invalid=False, chunk_cache=False,
                                                  special_tokens=False)
