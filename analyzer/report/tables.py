"""The page's HTML tables: merges and provenance. Everything is escaped."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from analyzer.bpe.readable import readable
from analyzer.queries import merge_parts
from analyzer.store import StoredMerge


def merges_table(title: str, merges: list[StoredMerge], top: int,
                 base_bytes: Callable[[int], bytes] | None = None) -> str:
    """The first `top` merges. An extension's parts may be its base's ids: `base_bytes` gives
    their bytes (without it, they show as `id N`)."""
    bytes_of = merge_parts(merges, base_bytes)

    def part(token: int) -> str:
        found = bytes_of(token)
        return f"id {token}" if found is None else readable(found)

    rows = "".join(
        f"<tr><td>{rank}</td><td><code>{escape(part(left))}</code></td>"
        f"<td><code>{escape(part(right))}</code></td>"
        f"<td><code>{escape(readable(token))}</code></td><td>{count:,}</td></tr>"
        for rank, (left, right, _, count, token) in enumerate(merges[:top], start=1))
    if not rows:
        rows = "<tr><td colspan='5'>no merges learned</td></tr>"
    return (f"<details><summary>{escape(title)}</summary><table class='merges'><thead><tr>"
            "<th>#</th><th>left</th><th>right</th><th>new token</th><th>occurrences</th>"
            f"</tr></thead><tbody>{rows}</tbody></table></details>")


def provenance_table(items: list[tuple[str, str]]) -> str:
    rows = "".join(f"<tr><th>{escape(key)}</th><td>{escape(value)}</td></tr>" for key, value in items)
    return f"<table class='provenance'><tbody>{rows}</tbody></table>"
