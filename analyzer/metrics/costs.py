"""What the same content costs each language under each priced model, and how much of the
same content a model's context window holds in each language.

Costs are per CONTENT_CHARS characters of pivot-language content: the measured units scaled so
that the pivot's text is that long. The same content, in each language, under each model, is
then comparable in money, whatever the corpus's size.

A bill also counts what a model's chat format wraps around each request (its framing: role and
separator tokens, a BOS, the reply's turn opened). Sent as one request per unit, the same
content costs each language its tokens plus the framing of every request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

from analyzer.external import ModelPrice

from .frames import measured_kinds

CONTENT_CHARS = 1_000_000

COLUMNS = ["model", "provider", "tokenizer", "lang", "tokens", "input_cost", "output_cost",
           "cost_ratio", "content_share", "context_chars", "framing", "framing_basis", "requests",
           "request_tokens", "request_cost", "request_ratio", "input_price", "output_price",
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


def requests_cost(tokens: float, pivot_tokens: float, requests: int, framing: int
                  ) -> tuple[float, float]:
    """(tokens, times the pivot's) of the same content sent as `requests` requests, each
    framed by `framing` tokens (its chat format's). Framing is paid per request whatever the
    language, so short messages narrow the ratio: a language cheaper than the pivot in content
    is less cheap per request, a dearer one less dear.

    >>> requests_cost(tokens=80, pivot_tokens=100, requests=10, framing=7)  # 0.8x in content
    (150, 0.8823529411764706)
    """
    framed = tokens + requests * framing
    return framed, framed / (pivot_tokens + requests * framing)


def model_costs(frame: pd.DataFrame, pivot: str, prices: Iterable[ModelPrice],
                framing: Mapping[str, tuple[int | None, str | None]] | None = None,
                requests: int = 0) -> pd.DataFrame:
    """One row per (priced model whose tokenizer the run measured, language): tokens, the
    input and output cost of the same content, the cost relative to the pivot's, how much of
    the same content fits in the model's context window against the pivot (`content_share`),
    and how many characters of the language's own text fit there (`context_chars`). Models
    whose tokenizer the run did not measure are left out.

    With the tokenizers' `framing` (`{name: (tokens per request, basis)}`) and the number of
    measured units, also the content sent as `requests` requests of one unit each: its tokens,
    input cost (scaled as the content's) and ratio to the pivot's (NaN where the framing is not
    known)."""
    framing = framing or {}
    production = frame[frame["kind"].isin(measured_kinds())].set_index(["vocab", "lang"])
    measured = set(production.index.get_level_values("vocab"))
    rows = []
    for price in prices:
        if price.tokenizer not in measured:
            continue
        rows_of = production.loc[price.tokenizer]
        pivot_row = rows_of.loc[pivot]
        per_request, basis = framing.get(price.tokenizer, (None, None))
        for lang, row in rows_of.iterrows():
            if per_request is None or not requests:
                request_tokens, request_ratio = float("nan"), float("nan")
            else:
                request_tokens, request_ratio = requests_cost(
                    row["tokens"], pivot_row["tokens"], requests, per_request)
            rows.append({
                "model": price.model, "provider": price.provider, "tokenizer": price.tokenizer,
                "lang": lang, "tokens": int(row["tokens"]),
                "input_cost": scaled_cost(row["tokens"], pivot_row["chars"], price.input),
                "output_cost": scaled_cost(row["tokens"], pivot_row["chars"], price.output),
                "cost_ratio": row["tokens"] / pivot_row["tokens"],
                "content_share": content_share(row["tokens"], pivot_row["tokens"]),
                "context_chars": row["chars_per_token"] * price.context_window,
                "framing": per_request, "framing_basis": basis, "requests": requests,
                "request_tokens": request_tokens,
                "request_cost": scaled_cost(request_tokens, pivot_row["chars"], price.input),
                "request_ratio": request_ratio,
                "input_price": price.input, "output_price": price.output,
                "context_window": price.context_window, "date": str(price.date),
                "source": price.source,
            })
    return pd.DataFrame(rows, columns=COLUMNS)
