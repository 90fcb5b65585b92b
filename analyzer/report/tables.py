"""The page's HTML tables: merges, cost and context, provenance. Everything is escaped."""

from __future__ import annotations

from html import escape

import pandas as pd

from analyzer.corpus import language_name
from analyzer.store import StoredMerge


def token_text(piece: bytes) -> str:
    """Readable text in quotes where the bytes are printable UTF-8, else escaped bytes.

    >>> token_text(b"e ")
    "'e '"
    >>> token_text(b"\\xe2\\x80")
    "b'\\\\xe2\\\\x80'"
    """
    try:
        text = piece.decode("utf-8")
    except UnicodeDecodeError:
        return repr(piece)
    return repr(text) if text.isprintable() else repr(piece)


def merges_table(title: str, merges: list[StoredMerge], top: int) -> str:
    pieces = {byte: bytes([byte]) for byte in range(256)}
    for _, _, new_id, _, token in merges:
        pieces[new_id] = token
    rows = "".join(
        f"<tr><td>{rank}</td><td><code>{escape(token_text(pieces[left]))}</code></td>"
        f"<td><code>{escape(token_text(pieces[right]))}</code></td>"
        f"<td><code>{escape(token_text(token))}</code></td><td>{count:,}</td></tr>"
        for rank, (left, right, _, count, token) in enumerate(merges[:top], start=1))
    if not rows:
        rows = "<tr><td colspan='5'>no merges learned</td></tr>"
    return (f"<details><summary>{escape(title)}</summary><table class='merges'><thead><tr>"
            "<th>#</th><th>left</th><th>right</th><th>new token</th><th>occurrences</th>"
            f"</tr></thead><tbody>{rows}</tbody></table></details>")


def cost_table(frame: pd.DataFrame, pivot: str, vocab: str, size: int, price: float,
               context_window: int) -> str:
    """Corpus cost per language at `price` per million tokens, and the characters that fit in a
    window of `context_window` tokens, under one vocabulary."""
    rows = frame[(frame["vocab"] == vocab) & (frame["size"] == size)].set_index("lang")
    pivot_cost = rows.loc[pivot, "tokens"] / 1e6 * price
    pivot_context = rows.loc[pivot, "chars_per_token"] * context_window
    body = []
    for lang in rows.sort_values("premium", ascending=False).index:
        row = rows.loc[lang]
        cost = row["tokens"] / 1e6 * price
        fits = row["chars_per_token"] * context_window
        body.append(
            f"<tr><td>{escape(language_name(lang))} <code>{escape(lang)}</code></td>"
            f"<td>{int(row['tokens']):,}</td><td>{cost:,.4f}</td><td>{cost - pivot_cost:+,.4f}</td>"
            f"<td>{row['overhead']:+.0%}</td><td>{fits:,.0f}</td><td>{fits / pivot_context:.0%}</td></tr>")
    return (f"<table class='numbers'><thead><tr><th>language</th><th>tokens</th>"
            f"<th>cost at {price:g} per million tokens</th><th>extra vs pivot</th>"
            f"<th>premium in money</th><th>characters in a {context_window:,}-token window</th>"
            f"<th>of the pivot's</th></tr></thead><tbody>{''.join(body)}</tbody></table>")


def provenance_table(items: list[tuple[str, str]]) -> str:
    rows = "".join(f"<tr><th>{escape(key)}</th><td>{escape(value)}</td></tr>" for key, value in items)
    return f"<table class='provenance'><tbody>{rows}</tbody></table>"
