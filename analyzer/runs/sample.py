"""The sample a run trains on from a training source: a byte budget per language, shared out by
the mix, and which documents make it.

Mixes: `natural` (each language's share is its share of the source), `uniform` (the same for
each), `temperature:A` (p ∝ n^A over the languages' bytes n, as XLM-R and mT5 sample: A = 1 is
natural, A = 0 uniform), or `LANG=SHARE,...` (shares of the user's, one per run language). The
total is `train_bytes`, else all of the source's text in the run's languages; a language that
has less than its budget gives all it has, and the run says so.

A document is taken when a hash of the seed, its language and its place in the language's
text (`selected`) falls under the language's rate, its budget over its bytes. So the same
source, seed and budget give the same documents on any machine, read in any order, on any
number of cores or workers; and the bytes taken come within a hair of the budget.

>>> budgets(parse_mix("uniform"), {"eng": 900, "fra": 100}, 400)
{'eng': 200, 'fra': 200}
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from analyzer.corpus import CorpusError, normalise_language
from analyzer.errors import SETTING

from .errors import RunError

ALL = 2**64
"""A rate threshold that takes every document."""


@dataclass(frozen=True)
class Mix:
    """How a budget is shared out: `kind` natural, uniform, temperature or shares."""

    kind: str
    alpha: float = 1.0
    shares: tuple[tuple[str, float], ...] = ()

    def __str__(self) -> str:
        if self.kind == "temperature":
            return f"temperature:{self.alpha:g}"
        if self.kind == "shares":
            return ",".join(f"{lang}={share:g}" for lang, share in self.shares)
        return self.kind


MIN_SHARE, MAX_SHARE = 1e-12, 1e12
"""The range of a language's share in a mix: only their ratios matter, and within it a sum of
shares, and a budget times a share, is a finite number (1e308 overflowed: exit 70)."""


def parse_mix(text: str) -> Mix:
    """A mix as written; RunError (setting `mix`) saying what is wrong.

    >>> parse_mix("temperature:0.3"), str(parse_mix("eng=2,fr=1"))
    (Mix(kind='temperature', alpha=0.3, shares=()), 'eng_Latn=2,fra_Latn=1')
    """
    value = text.strip()
    if value in ("natural", "uniform"):
        return Mix(value)
    if value.startswith("temperature:"):
        try:
            alpha = float(value.split(":", 1)[1])
        except ValueError:
            alpha = float("nan")
        if not 0 <= alpha <= 10:
            raise RunError(f"{SETTING} {text!r}: the temperature's exponent is a number from 0 "
                           "(uniform) to 10 (1 is natural; XLM-R and mT5 use 0.3)",
                           setting="mix", value=text)
        return Mix("temperature", alpha)
    if "=" in value:
        shares: dict[str, float] = {}
        for part in value.split(","):
            code, equals, number = part.partition("=")
            try:
                lang, share = normalise_language(code.strip()), float(number)
            except (CorpusError, ValueError):
                raise RunError(f"{SETTING} {text!r}: {part.strip()!r} is not LANG=SHARE (a "
                               "language code and a number)", setting="mix", value=text) from None
            if not MIN_SHARE <= share <= MAX_SHARE:  # NaN too; sums of shares stay finite
                raise RunError(f"{SETTING} {text!r}: the share of {lang} must be a number from "
                               f"{MIN_SHARE:g} to {MAX_SHARE:g}, not {number.strip()}",
                               setting="mix", value=text)
            if lang in shares:
                raise RunError(f"{SETTING} {text!r}: {lang} is given twice", setting="mix",
                               value=text)
            shares[lang] = share
        return Mix("shares", shares=tuple(shares.items()))
    raise RunError(f"{SETTING} {text!r}: write natural, uniform, temperature:A (e.g. "
                   "temperature:0.3) or LANG=SHARE,... (e.g. eng_Latn=3,hin_Deva=1)",
                   setting="mix", value=text)


def budgets(mix: Mix, available: dict[str, int], total: int | None) -> dict[str, int]:
    """Each language's byte budget: `total` (default: all the text there is) shared out."""
    languages = list(available)
    total = sum(available.values()) if total is None else total
    if mix.kind == "shares":
        shares = dict(mix.shares)
        missing = [lang for lang in languages if lang not in shares]
        extra = [lang for lang in shares if lang not in available]
        if missing or extra:
            said = (f"has no share for {', '.join(missing)}" if missing
                    else f"names {', '.join(extra)}, not a language of this run")
            raise RunError(f"{SETTING} {mix}: it {said}; give every run language a share",
                           setting="mix", value=str(mix))
        weights = [shares[lang] for lang in languages]
    elif mix.kind == "uniform":
        weights = [1.0] * len(languages)
    elif mix.kind == "temperature":
        whole = sum(available.values()) or 1
        weights = [(available[lang] / whole) ** mix.alpha if available[lang] else 0.0
                   for lang in languages]
    else:
        weights = [float(available[lang]) for lang in languages]
    weight_sum = sum(weights) or 1.0
    return {lang: int(total * weight / weight_sum) for lang, weight in zip(languages, weights)}


def threshold(budget: int, available: int) -> int:
    """The hash under which a document is taken: its language's budget over its bytes, out of
    2^64 (ALL: every document).

    >>> threshold(50, 100) == 2**63, threshold(100, 100) == ALL
    (True, True)
    """
    if budget >= available:
        return ALL
    return budget * ALL // available


def _language_key(lang: str) -> int:
    return int.from_bytes(hashlib.sha256(lang.encode()).digest()[:8], "little")


def selected(seed: int, lang: str, places: np.ndarray, under: int) -> np.ndarray:
    """Which of the documents at `places` (their 0-based places in the language's text) are
    taken: SplitMix64 of the seed, the language and the place, under `under`.

    >>> selected(0, "eng", np.arange(4), ALL).tolist()
    [True, True, True, True]
    """
    if under >= ALL:
        return np.ones(len(places), dtype=bool)
    with np.errstate(over="ignore"):
        z = places.astype(np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15 + _language_key(lang))
                                                  % ALL)
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return z < np.uint64(under)


def count_floor_said(training: dict | None) -> str | None:
    """What a run's count floor (`min_chunk_count`) left of its sample's distinct chunks, in a
    sentence (None: no floor). `training` is the run's stored record of its sample.

    >>> print(count_floor_said({"min_chunk_count": 2, "languages": [{"chunks": {"words": {
    ...     "chunks": 40, "n_bytes": 300, "kept_chunks": 10, "kept_bytes": 60}}}]}))
    Count floor 2: trained on the chunks seen at least 2 times, 10 of 40 distinct chunks \
(25.0%), 20.0% of their bytes [words].
    """
    floor = (training or {}).get("min_chunk_count", 1)
    if floor <= 1 or training is None:
        return None
    said = []
    names = training["languages"][0].get("chunks", {}) if training["languages"] else {}
    for name in names:
        tables = [item["chunks"][name] for item in training["languages"]]
        chunks, kept = sum(t["chunks"] for t in tables), sum(t["kept_chunks"] for t in tables)
        n_bytes, kept_bytes = sum(t["n_bytes"] for t in tables), sum(t["kept_bytes"] for t in tables)
        said.append(f"{kept:,} of {chunks:,} distinct chunks ({kept / max(1, chunks):.1%}), "
                    f"{kept_bytes / max(1, n_bytes):.1%} of their bytes"
                    + (f" [{name}]" if name else ""))
    return (f"Count floor {floor}: trained on the chunks seen at least {floor} times"
            + (", " + "; ".join(said) if said else "") + ".")
