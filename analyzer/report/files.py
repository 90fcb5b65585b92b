"""What the report pages are written with: the one plotly.js per folder, their scripts and
styles (files of static/, inlined) and their data (one JSON block); files are written by
`analyzer.files.write_atomically`. Plotly is imported where plotly.js is asked for: a command
that names the default folder loads none of it."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib.resources import files
from pathlib import Path

from analyzer.files import without_local_paths as without_local_paths  # the pages' import of it
from analyzer.files import write_atomically

DEFAULT_OUT = Path("reports")
STATIC = files("analyzer.report") / "static"
"""The pages' scripts and styles, as files (package data): a maintainer edits them as JavaScript
and CSS, and every page inlines the ones it runs."""


OPENING_COMMENT = re.compile(r"\A(?:/\*.*?\*/|(?://[^\n]*\n)+)\s*", re.S)
"""A file's opening comment (what the file is, for whoever edits it)."""


@cache
def static_text(name: str) -> str:
    """A file of `STATIC` as a report page inlines it (the page is read offline, from disk, with
    no other file than plotly.js beside it), without its opening comment: a page need not carry
    it. The service's pages load the whole file from /static.

    >>> static_text("page-data.js").splitlines()[0]
    'function pageData() {'
    """
    return OPENING_COMMENT.sub("", (STATIC / name).read_text(encoding="utf-8"), count=1)


def inline_styles(*names: str) -> str:
    """The page's style element: these files of `STATIC`, in order."""
    return "<style>" + "".join(static_text(name) for name in names) + "</style>"


def inline_scripts(*names: str) -> str:
    """A script element for each of these files of `STATIC`, in order."""
    return "".join(f"<script>{static_text(name)}</script>" for name in names)


PAGE_DATA = "page-data"
"""The id of a page's one JSON block: what its scripts need that is not markup (`pageData()` of
static/page-data.js reads it), in the reports and the service's pages alike."""


def page_data(data: dict) -> str:
    """The page's data as its one JSON block. `<`, `>` and `&` are written as JSON escapes: no
    text in it (a language's name, a corpus's) can close the element or open a comment in it,
    and the block never runs (the service's Content-Security-Policy hashes only the scripts
    that do).

    >>> print(page_data({"name": "</script><!--"}))
    <script type="application/json" id="page-data">{"name": "\\u003c/script\\u003e\\u003c!--"}</script>
    """
    text = json.dumps(data, ensure_ascii=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{PAGE_DATA}">{text}</script>'


def plotly_file_name() -> str:
    from plotly.offline import get_plotlyjs_version

    return f"plotly-{get_plotlyjs_version()}.min.js"


def plotly_script(self_contained: bool) -> str:
    """The page's one script tag: plotly.js inlined, or the file beside the page."""
    if self_contained:
        from plotly.offline import get_plotlyjs

        return f"<script>{get_plotlyjs()}</script>"
    return f"<script src='{plotly_file_name()}'></script>"


def ensure_plotlyjs(out: Path) -> Path:
    """plotly.js in the folder, written once per plotly version."""
    path = out / plotly_file_name()
    if not path.exists():
        from plotly.offline import get_plotlyjs

        write_atomically(path, get_plotlyjs())
    return path
