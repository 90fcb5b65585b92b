"""How one value is written on a terminal: text made literal, numbers, sizes, durations."""

from __future__ import annotations

import json
import math
import re

from pydantic import BaseModel
from rich.cells import cell_len
from rich.markup import escape
from rich.text import Text

_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def plain(value) -> str:
    """Any value as literal terminal text: rich markup escaped, and control, line-breaking and
    direction-changing characters shown as escapes, so a name or a path from the data can
    neither restyle the output nor move the cursor or set the terminal's title.

    >>> print(plain("[bold]x\x1b]0;title\x07"))
    \\[bold]x\\x1b]0;title\\x07
    """
    text = _INVISIBLE.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"),
                          str(value))
    return escape(text)


_WORD = re.compile(r"\S+")


def fold_words(text: Text, width: int) -> Text:
    """`text` with each line folded between words into lines of at most `width` columns; a
    word longer than that (a path, a URL) is never cut: it stays whole, on a line of its own.
    Styles are kept.

    >>> print(fold_words(Text("run 3 failed: /a/very/long/path/to/a/file.txt is gone"), 16))
    run 3 failed:
    /a/very/long/path/to/a/file.txt
    is gone
    >>> print(fold_words(Text("  /a/very/long/path/to/a/file.txt"), 16))  # no empty line first
      /a/very/long/path/to/a/file.txt
    """
    lines = []
    for line in text.split("\n", allow_blank=True):
        breaks, start = [], 0  # offsets where a line begins, after the first
        for word in _WORD.finditer(line.plain):
            if line.plain[start:word.start()].strip() and \
                    cell_len(line.plain[start:word.end()]) > width:
                breaks.append(word.start())
                start = word.start()
        for piece in line.divide(breaks):
            piece.rstrip()
            lines.append(piece)
    return Text("\n").join(lines)


def json_text(document) -> str:
    """A `--json` answer: read models as their JSON documents, indented, other scripts as they
    are, and the characters `plain` escapes written as JSON escapes (the same value, read
    back), so that a name from the data cannot move a terminal's cursor either.

    >>> print(json_text({"name": "Ελληνικά\u202e"}))
    {
      "name": "Ελληνικά\\u202e"
    }
    """
    text = json.dumps(document, indent=2, ensure_ascii=False,
                      default=lambda value: value.model_dump(mode="json")
                      if isinstance(value, BaseModel) else _unknown(value))
    # json has escaped the control characters in strings; the line breaks left are its indent
    return _INVISIBLE.sub(lambda match: match.group() if match.group() == "\n"
                          else f"\\u{ord(match.group()):04x}", text)


def _unknown(value):
    raise TypeError(f"{type(value).__name__} is not JSON")


def with_interval(value: float, low: float, high: float, spec: str, shown: bool = True,
                  between: str = " ") -> str:
    """A value with its interval in brackets (`between` them: a space, or a line break in a
    table's cell); the value alone where there is none (a run that counted joined texts draws
    no interval), or where it is not `shown` (asked for).

    >>> with_interval(0.5, 0.4, 0.6, ".2f"), with_interval(0.5, math.nan, math.nan, ".2f")
    ('0.50 [0.40, 0.60]', '0.50')
    >>> with_interval(0.5, 0.4, 0.6, ".2f", shown=False)
    '0.50'
    """
    if not shown or math.isnan(low) or math.isnan(high):
        return format(value, spec)
    return f"{value:{spec}}{between}[{low:{spec}}, {high:{spec}}]"


def compact_sizes(sizes: list[int]) -> str:
    """`256,512` as is; four or more sizes as their range and count.

    >>> compact_sizes([256, 512, 1024, 2048, 4096])
    '256..4096 (5)'
    >>> compact_sizes([])
    '-'
    """
    if not sizes:
        return "-"
    if len(sizes) <= 3:
        return ",".join(map(str, sizes))
    return f"{sizes[0]}..{sizes[-1]} ({len(sizes)})"
