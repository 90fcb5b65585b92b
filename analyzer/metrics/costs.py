"""What the same content costs each language under each priced model, and how much of each
language a model's context window holds.

Costs are per CONTENT_CHARS characters of pivot-language content: the measured units scaled so
that the pivot's text is that long. The same content, in each language, under each model, is
then comparable in money, whatever the corpus's size.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from analyzer.external import ModelPrice
from analyzer.store import VocabKind

CONTENT_CHARS = 1_000_000

COLUMNS = ["model", "provider", "tokenizer", "lang", "tokens", "input_cost", "output_cost",
           "cost_ratio", "context_chars", "context_share", "input_price", "output_price",
           "context_window", "date", "source"]


def scaled_cost(tokens: float, pivot_chars: float, price_per_million: float) -> float:
    """Dollars for CONTENT_CHARS characters' worth of pivot content, at a price per million tokens.

    >>> scaled_cost(tokens=500, pivot_chars=2_000, price_per_million=2.0)  # 250 tokens per 1k chars
    0.5
    """
    return tokens * (CONTENT_CHARS / pivot_chars) * price_per_million / 1e6


def model_costs(frame: pd.DataFrame, pivot: str, prices: Iterable[ModelPrice]) -> pd.DataFrame:
    """One row per (priced model whose tokenizer the run measured, language): tokens, the
    input and output cost of the same content, the cost relative to the pivot's, and the
    characters of the language that fit in the model's context window (and that as a share
    of the pivot's). Models whose tokenizer the run did not measure are left out."""
    production = frame[frame["kind"] == VocabKind.PRODUCTION].set_index(["vocab", "lang"])
    measured = set(production.index.get_level_values("vocab"))
    rows = []
    for price in prices:
        if price.tokenizer not in measured:
            continue
        rows_of = production.loc[price.tokenizer]
        pivot_row = rows_of.loc[pivot]
        for lang, row in rows_of.iterrows():
            context_chars = row["chars_per_token"] * price.context_window
            rows.append({
                "model": price.model, "provider": price.provider, "tokenizer": price.tokenizer,
                "lang": lang, "tokens": int(row["tokens"]),
                "input_cost": scaled_cost(row["tokens"], pivot_row["chars"], price.input),
                "output_cost": scaled_cost(row["tokens"], pivot_row["chars"], price.output),
                "cost_ratio": row["tokens"] / pivot_row["tokens"],
                "context_chars": context_chars,
                "context_share": context_chars / (pivot_row["chars_per_token"] * price.context_window),
                "input_price": price.input, "output_price": price.output,
                "context_window": price.context_window, "date": str(price.date),
                "source": price.source,
            })
    return pd.DataFrame(rows, columns=COLUMNS)
