"""The bill: what a month's workload costs on each priced model, with its 95 % interval.

A workload is an amount of content a month, stated as a reader knows it: `tokens` of text in
the reference language, as one tokenizer counts it (`counted_by`, the model they use now), and
how that content is shared among the run's languages (`mix`, shares of the content: the same
sentence in Hindi is one share of Hindi). The run measured the same content in every language
under every tokenizer, so the workload under model m is, exactly,

    tokens_m = tokens / T(reference, counted_by) * sum over languages l of mix[l] * T(l, m)

where T(l, t) is the run's count of language l under tokenizer t. A model is never called cheap
for counting the reference language wastefully: the content is fixed by one yardstick, not by
each model's own count of it. With `requests` a month, each request also pays the model's chat
framing (its role and separator tokens). Costs are input tokens at each model's dated input
price; the interval resamples the measured units, as every other interval of a run.

>>> import numpy as np
>>> totals = {"a": {"eng_Latn": 100, "hin_Deva": 300}, "b": {"eng_Latn": 80, "hin_Deva": 160}}
>>> month_tokens(Workload(1000, {"eng_Latn": 0.5, "hin_Deva": 0.5}, "a"), totals, "eng_Latn", "b")
1200.0
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyzer.corpus import language_name
from analyzer.errors import Invalid, did_you_mean
from analyzer.external import ModelPrice

from .data import RunData
from .frames import request_framing

BILL_COLUMNS = ["model", "provider", "tokenizer", "tokens", "tokens_ci_low", "tokens_ci_high",
                "cost", "cost_ci_low", "cost_ci_high", "vs_cheapest", "framing", "input_price",
                "date", "source"]
"""A model's row of the bill (`bill`): the workload's input tokens a month under its tokenizer
and what they cost in US dollars at its input price, each with its 95 % interval; its cost over
the cheapest model's; the framing tokens each request pays (null: not known); the price, its
date and source."""

_SUFFIXES = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


def parse_amount(text: str, what: str = "--bill", zero: bool = False) -> float:
    """A number of tokens (or requests) as people write it: `250000`, `2.5M`, `1B`, `1e8`.

    >>> parse_amount("2.5M"), parse_amount("1_000"), parse_amount("3k"), parse_amount("1e8")
    (2500000.0, 1000.0, 3000.0, 100000000.0)
    """
    found = re.fullmatch(r"\s*([0-9][0-9_]*(?:\.[0-9]+)?(?:[eE]\+?[0-9]{1,2})?)\s*"
                         r"([kKmMbBgGtT]?)\s*", text or "")
    value = float(found.group(1).replace("_", "")) * _SUFFIXES[found.group(2).lower()] \
        if found else math.nan
    if not ((value > 0 or (zero and value == 0)) and math.isfinite(value)) or value > 1e18:
        raise Invalid(f"{what} takes a {'' if zero else 'positive '}amount such as 250000, "
                      f"2.5M, 1B or 1e8 (at most 1e18), not {text[:80]!r}")
    return value


def parse_mix(text: str | None, languages: list[str]) -> dict[str, float]:
    """`eng_Latn=0.6,hin_Deva=0.4` (shares of the content, any positive weights, made to sum
    to 1), or every language of the run alike when `text` is empty.

    >>> parse_mix("eng_Latn=3, hin_Deva=1", ["eng_Latn", "hin_Deva"])
    {'eng_Latn': 0.75, 'hin_Deva': 0.25}
    >>> parse_mix(None, ["eng_Latn", "hin_Deva"])
    {'eng_Latn': 0.5, 'hin_Deva': 0.5}
    """
    if not text or not text.strip():
        return {lang: 1 / len(languages) for lang in languages}
    weights: dict[str, float] = {}
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        lang, sign, value = part.partition("=")
        lang = lang.strip()
        if not sign:
            raise Invalid(f"--mix takes LANG=SHARE pairs (eng_Latn=0.6,hin_Deva=0.4), not {part!r}")
        if lang not in languages:
            raise Invalid(f"--mix names {lang!r}, which is not a language of the run (its "
                          f"languages: {', '.join(languages)}){did_you_mean(lang, languages)}")
        if lang in weights:
            raise Invalid(f"--mix names {lang} twice")
        try:
            weight = float(value)
        except ValueError:
            weight = math.nan
        if not (weight >= 0 and math.isfinite(weight)):
            raise Invalid(f"--mix: {lang}'s share must be a number 0 or more, not {value!r}")
        weights[lang] = weight
    largest = max(weights.values())  # divided first: shares of 1e308 must not sum to infinity
    total = sum(weight / largest for weight in weights.values()) if largest > 0 else 0.0
    if not total > 0:
        raise Invalid("--mix: the shares add up to nothing; give a language a share above 0")
    return {lang: weight / largest / total for lang, weight in weights.items()}


@dataclass(frozen=True)
class Workload:
    """A month's content: `tokens` of reference-language text as `counted_by` counts it, shared
    among languages as `mix` says (shares summing to 1), sent as `requests` requests."""

    tokens: float
    mix: Mapping[str, float]
    counted_by: str
    requests: float = 0

    def words(self, reference: str, languages: list[str]) -> str:
        """The workload in words, for a bill's title (`languages`: the run's)."""
        mix = ("mixed evenly over the run's languages" if len(set(self.mix.values())) == 1
               and set(self.mix) == set(languages) and len(self.mix) > 1 else
               ", ".join(f"{share * 100:.3g}% {language_name(lang)}"
                         for lang, share in self.mix.items()))
        requests = f", in {self.requests:,.0f} requests" if self.requests else ""
        return (f"{self.tokens:,.0f} tokens a month of {language_name(reference)} as "
                f"{self.counted_by} counts it, {mix}{requests}")


def workload_of(data: RunData, prices: Iterable[ModelPrice], tokens: str,
                mix: str | None = None, counted_by: str | None = None,
                requests: str | None = None) -> Workload:
    """A workload as a face was given it (the CLI's options, the service's query): `tokens` a
    month (`2.5M`), the `mix` (default: every language of the run alike), the tokenizer that
    counted them (default: the run's first production tokenizer a model of the price table
    uses, else its first), `requests` a month (default: none counted)."""
    measured = [v.scope for v in data.vocabularies if v.kind.measured]
    priced = {price.tokenizer for price in prices}
    if counted_by is None:
        counted_by = next((name for name in measured if name in priced),
                          measured[0] if measured else "")
    if not counted_by:
        raise Invalid("a bill needs a tokenizer the run measured to count the workload: this "
                      "run measured none (analyzer run -t o200k_base)")
    count = parse_amount(requests, "--requests", zero=True) if requests else 0
    if count != int(count):
        raise Invalid(f"--requests is a whole number of requests a month, not {requests!r}")
    return Workload(parse_amount(tokens), parse_mix(mix, data.run.languages), counted_by, count)


def month_tokens(workload: Workload, totals: Mapping[str, Mapping[str, float]], reference: str,
                 tokenizer: str, framing: float = 0.0) -> float:
    """The workload's tokens under `tokenizer`, from each tokenizer's count of each language
    (`totals[tokenizer][lang]`) and the framing of a request (see the module)."""
    copies = workload.tokens / totals[workload.counted_by][reference]
    content = sum(share * totals[tokenizer][lang] for lang, share in workload.mix.items())
    return copies * content + workload.requests * framing


def bill(data: RunData, workload: Workload, prices: Iterable[ModelPrice],
         resamples: int = 1000) -> pd.DataFrame:
    """One row per priced model whose tokenizer the run measured (`BILL_COLUMNS`), cheapest
    first. Invalid when the workload's yardstick was not measured, or the reference language
    has no tokens under it."""
    reference = data.run.pivot
    keys = {v.scope: (v.scope, v.pretokenizer, v.size) for v in data.vocabularies
            if v.kind.measured and (v.scope, v.pretokenizer, v.size) in data.counts}
    if workload.counted_by not in keys:
        raise Invalid(f"--counted-by {workload.counted_by!r}: the run measured no such tokenizer "
                      f"(it measured: {', '.join(keys) or 'none'})"
                      f"{did_you_mean(workload.counted_by, keys)}")
    langs = data.run.languages
    totals = {name: dict(zip(langs, data.totals(key, langs).astype(float)))
              for name, key in keys.items()}
    if not totals[workload.counted_by][reference] > 0:
        raise Invalid(f"{workload.counted_by} counts no token of {reference}: it cannot measure "
                      "the workload")
    boot = None if data.joined_counts else data.bootstrap_totals(resamples)
    framing = request_framing(data.vocabularies)
    shares = np.array([workload.mix.get(lang, 0.0) for lang in langs])

    def resampled(name: str) -> np.ndarray | None:  # each language's totals, langs x resamples
        if boot is None or keys[name] not in boot:
            return None
        on = data.on_pivot(keys[name])
        if on != langs:
            return None
        return boot[keys[name]]

    rows = []
    for price in prices:
        if price.tokenizer not in keys:
            continue
        per_request = framing.get(price.tokenizer, (None, None))[0]
        tokens = month_tokens(workload, totals, reference, price.tokenizer, per_request or 0)
        low = high = math.nan
        mine, yardstick = resampled(price.tokenizer), resampled(workload.counted_by)
        if mine is not None and yardstick is not None:
            draws = (workload.tokens / yardstick[langs.index(reference)] * (shares @ mine)
                     + workload.requests * (per_request or 0))
            low, high = (float(v) for v in np.percentile(draws, [2.5, 97.5]))
        rows.append({"model": price.model, "provider": price.provider,
                     "tokenizer": price.tokenizer, "tokens": tokens, "tokens_ci_low": low,
                     "tokens_ci_high": high, "cost": tokens * price.input / 1e6,
                     "cost_ci_low": low * price.input / 1e6,
                     "cost_ci_high": high * price.input / 1e6, "framing": per_request,
                     "input_price": price.input, "date": str(price.date), "source": price.source})
    frame = pd.DataFrame(rows, columns=[c for c in BILL_COLUMNS if c != "vs_cheapest"])
    frame = frame.sort_values("cost", kind="stable").reset_index(drop=True)
    cheapest = frame["cost"].min() if len(frame) else math.nan
    frame["vs_cheapest"] = frame["cost"] / cheapest if cheapest else math.nan
    return frame[BILL_COLUMNS]


def unpriced(data: RunData, prices: Iterable[ModelPrice]) -> list[str]:
    """The production tokenizers of the run no model of the price table uses: in the verdicts,
    never in a bill (which says so)."""
    priced = {price.tokenizer for price in prices}
    return [v.scope for v in data.vocabularies if v.kind.production and v.scope not in priced]


def bill_sentence(rows: pd.DataFrame, workload: Workload, reference: str, languages: list[str],
                  not_priced: list[str] | None = None) -> str:
    """The bill's answer in one sentence: the cheapest model for this workload, and the dearest;
    and which tokenizers of the run no price names (so the verdicts' cheapest may be missing)."""
    if rows.empty:
        return ("No model of the price table uses a tokenizer this run measured: measure one "
                "(analyzer run -t o200k_base) to price the workload.")
    first, last = rows.iloc[0], rows.iloc[-1]
    interval = (f" (95 % interval ${first['cost_ci_low']:,.2f} to ${first['cost_ci_high']:,.2f})"
                if first["cost_ci_low"] == first["cost_ci_low"] else "")
    said = (f"For {workload.words(reference, languages)}, the cheapest model is {first['model']}: "
            f"${first['cost']:,.2f} a month of input{interval}, at its price of {first['date']}")
    if len(rows) > 1 and last["vs_cheapest"] == last["vs_cheapest"]:
        said += (f"; the dearest, {last['model']}, costs {last['vs_cheapest']:.2f}x that "
                 f"(${last['cost']:,.2f})")
    if not_priced:
        said += (f". Not priced (no model of the price table uses them): "
                 f"{', '.join(not_priced)}")
    return said + "."


__all__ = ["BILL_COLUMNS", "Workload", "bill", "bill_sentence", "month_tokens", "parse_amount",
           "parse_mix", "unpriced", "workload_of"]
