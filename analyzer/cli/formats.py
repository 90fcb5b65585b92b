"""How one value is written on a terminal: text made literal, numbers, sizes, durations."""

from __future__ import annotations

import json
import math
import re

from pydantic import BaseModel
from rich.markup import escape

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


def with_interval(value: float, low: float, high: float, spec: str, shown: bool = True) -> str:
    """A value with its interval in brackets; the value alone where there is none (a run
    that counted joined texts draws no interval), or where it is not `shown` (asked for).

    >>> with_interval(0.5, 0.4, 0.6, ".2f"), with_interval(0.5, math.nan, math.nan, ".2f")
    ('0.50 [0.40, 0.60]', '0.50')
    >>> with_interval(0.5, 0.4, 0.6, ".2f", shown=False)
    '0.50'
    """
    if not shown or math.isnan(low) or math.isnan(high):
        return format(value, spec)
    return f"{value:{spec}} [{low:{spec}}, {high:{spec}}]"


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
