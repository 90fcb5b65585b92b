"""How a long page is found around in: every section has an anchor and collapses, and a sticky
bar (with the language filter, when the page has one) lists them all, with the cost view and
the top of the page one click away.

>>> anchors = Anchors()
>>> anchors.new("What it costs"), anchors.new("What it costs")
('what-it-costs', 'what-it-costs-2')
"""

from __future__ import annotations

import re
from html import escape

COSTS_TITLE = "What it costs"
"""The cost view's section: the bar links to it directly."""


class Anchors:
    """Unique, readable ids from section titles."""

    def __init__(self) -> None:
        self.taken: set[str] = {"top", "contents"}

    def new(self, title: str) -> str:
        base = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"
        anchor, n = base, 1
        while anchor in self.taken:
            n += 1
            anchor = f"{base}-{n}"
        self.taken.add(anchor)
        return anchor


def section(anchor: str, title: str, body: str, takeaway: str = "") -> str:
    """A section folded under its title and its takeaway (what this run shows in it, as HTML:
    its terms may link to their definitions): the first reading is the answer above it; a
    click on the title, or a link to the section, opens it."""
    said = f"<p class='muted takeaway'>{takeaway}</p>" if takeaway else ""
    return (f"<section id='{escape(anchor, quote=True)}'><details class='section'>"
            f"<summary><h2>{escape(title)}</h2>{said}</summary>{body}</details></section>")


def toolbar(sections: list[tuple[str, str]], filters: str) -> str:
    """The sticky bar: contents (every section's link), the cost view, back to top, and the
    language filter's controls below them."""
    links = "".join(f"<li><a href='#{escape(anchor, quote=True)}'>{escape(title)}</a></li>"
                    for anchor, title in sections)
    costs = next((anchor for anchor, title in sections if title == COSTS_TITLE), None)
    quick = (f"<a class='jump' href='#{escape(costs, quote=True)}'>{escape(COSTS_TITLE)}</a>"
             if costs else "")
    return (f"<div id='toolbar' class='toolbar'><nav id='contents' aria-label='contents'>"
            f"<details class='toc'><summary>Contents ({len(sections)} sections)</summary>"
            f"<ol>{links}</ol></details>{quick}<a class='jump' href='#top'>Back to top</a>"
            f"</nav>{filters}</div>")
