"""What the report pages are written with: the one plotly.js per folder, and the page style
they share (files are written by `analyzer.files.write_atomically`)."""

from __future__ import annotations

from pathlib import Path

from plotly.offline import get_plotlyjs, get_plotlyjs_version

from analyzer.files import without_local_paths as without_local_paths  # the pages' import of it
from analyzer.files import write_atomically

DEFAULT_OUT = Path("reports")
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 1200px; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2.5rem; font-size: 1.25rem; }
.lead { font-size: 1.15rem; } .muted { color: #666; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .9rem; }
th, td { border-bottom: 1px solid #ddd; padding: .25rem .6rem; text-align: left; vertical-align: top; }
table.numbers td:not(:first-child) { text-align: right; font-variant-numeric: tabular-nums; }
details { margin: .3rem 0; } summary { cursor: pointer; font-weight: 600; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.figure { margin: 1rem 0 2rem; }
.toolbar { position: sticky; top: 0; z-index: 10; background: #f7f7f7; border: 1px solid #ddd;
           padding: .3rem .7rem; margin: 1rem 0; font-size: .9rem; }
.toolbar nav { display: flex; gap: 1.2rem; align-items: baseline; flex-wrap: wrap; }
.toolbar .toc ol { position: absolute; background: #fff; border: 1px solid #ddd; margin: .3rem 0;
                   padding: .5rem 1rem .5rem 2rem; max-height: 70vh; overflow-y: auto;
                   box-shadow: 0 4px 12px rgba(0, 0, 0, .12); }
.filter { border-top: 1px solid #ddd; margin-top: .3rem; padding-top: .3rem; }
section { scroll-margin-top: var(--toolbar, 5rem); }
details.section > summary { list-style: none; }
details.section > summary::-webkit-details-marker { display: none; }
details.section > summary h2 { display: inline-block; margin: .8rem 0 .1rem; font-size: 1.15rem; }
details.section > summary .takeaway { margin: 0 0 .3rem 1.1rem; font-weight: normal; }
a.term { color: inherit; text-decoration: underline dotted; }
dl.glossary dt { font-weight: 600; margin-top: .5rem; } dl.glossary dd { margin-left: 1.2rem; }
details.section > summary h2::before { content: "\\25BE  "; color: #999; font-size: .9rem; }
details.section:not([open]) > summary h2::before { content: "\\25B8  "; }
.filter input[type=search] { margin: 0 .6rem; padding: .15rem .4rem; min-width: 14rem; }
.filter label { margin-right: .6rem; white-space: nowrap; }
.filter details.scripts { display: inline-block; vertical-align: top; }
.filter details.scripts[open] { display: block; max-height: 30vh; overflow-y: auto; }
"""


def plotly_file_name() -> str:
    return f"plotly-{get_plotlyjs_version()}.min.js"


def plotly_script(self_contained: bool) -> str:
    """The page's one script tag: plotly.js inlined, or the file beside the page."""
    if self_contained:
        return f"<script>{get_plotlyjs()}</script>"
    return f"<script src='{plotly_file_name()}'></script>"


def ensure_plotlyjs(out: Path) -> Path:
    """plotly.js in the folder, written once per plotly version."""
    path = out / plotly_file_name()
    if not path.exists():
        write_atomically(path, get_plotlyjs())
    return path
