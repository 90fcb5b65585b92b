"""What the same content costs each language under each priced model, and how much of the
same content a model's context window holds in each language.

Costs are per CONTENT_CHARS characters of pivot-language content: the measured units scaled so
that the pivot's text is that long. The same content, in each language, under each model, is
then comparable in money, whatever the corpus's size.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from analyzer.external import ModelPrice

from .frames import MEASURED_KINDS

CONTENT_CHARS = 1_000_000

COLUMNS = ["model", "provider", "tokenizer", "lang", "tokens", "input_cost", "output_cost",
           "cost_ratio", "content_share", "context_chars", "input_price", "output_price",
           "context_window", "date", "source"]


def scaled_cost(tokens: float, pivot_chars: float, price_per_million: float) -> float:
    """Dollars for CONTENT_CHARS characters' worth of pivot content, at a price per million tokens.

    >>> scaled_cost(tokens=500, pivot_chars=2_000, price_per_million=2.0)  # 250 tokens per 1k chars
    0.5
    """
    return tokens * (CONTENT_CHARS / pivot_chars) * price_per_million / 1e6


def content_share(tokens: float, pivot_tokens: float) -> float:
    """How much of the same content fits in a context window in a language, as a share of what
    fits in the pivot: the inverse of the premium. (Characters are no measure of content: the
    same sentence is a third as many characters in Chinese as in English.)

    >>> content_share(tokens=250, pivot_tokens=200)  # a +25 % premium: 80 % of the content
    0.8
    """
    return pivot_tokens / tokens


def model_costs(frame: pd.DataFrame, pivot: str, prices: Iterable[ModelPrice]) -> pd.DataFrame:
    """One row per (priced model whose tokenizer the run measured, language): tokens, the
    input and output cost of the same content, the cost relative to the pivot's, how much of
    the same content fits in the model's context window against the pivot (`content_share`),
    and how many characters of the language's own text fit there (`context_chars`). Models
    whose tokenizer the run did not measure are left out."""
    production = frame[frame["kind"].isin(MEASURED_KINDS)].set_index(["vocab", "lang"])
    measured = set(production.index.get_level_values("vocab"))
    rows = []
    for price in prices:
        if price.tokenizer not in measured:
            continue
        rows_of = production.loc[price.tokenizer]
        pivot_row = rows_of.loc[pivot]
        for lang, row in rows_of.iterrows():
            rows.append({
                "model": price.model, "provider": price.provider, "tokenizer": price.tokenizer,
                "lang": lang, "tokens": int(row["tokens"]),
                "input_cost": scaled_cost(row["tokens"], pivot_row["chars"], price.input),
                "output_cost": scaled_cost(row["tokens"], pivot_row["chars"], price.output),
                "cost_ratio": row["tokens"] / pivot_row["tokens"],
                "content_share": content_share(row["tokens"], pivot_row["tokens"]),
                "context_chars": row["chars_per_token"] * price.context_window,
                "input_price": price.input, "output_price": price.output,
                "context_window": price.context_window, "date": str(price.date),
                "source": price.source,
            })
    return pd.DataFrame(rows, columns=COLUMNS)
