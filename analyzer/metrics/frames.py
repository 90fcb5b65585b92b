"""The run's numbers as pandas frames: one row per (vocabulary, size, language).

premium = tokens(L) / tokens(pivot) over the same units, under the same vocabulary;
byte premium = bytes(L) / bytes(pivot); and premium = byte premium x (bytes per token of the
pivot / bytes per token of L), which splits the tax into the script's part and the
vocabulary's part.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlite_utils import Database

from analyzer.store import RunSummary, get_run, load_counts
from analyzer.store.models import Text

from .stats import bootstrap_weights, gini, separates_words

RESAMPLES = 1000


@dataclass
class RunData:
    """Everything metrics need from the database, as arrays aligned with the measured units."""

    run: RunSummary
    counts: dict[tuple[str, int], dict[str, np.ndarray]]
    """`{(vocab, size): {lang: tokens per measured unit}}`."""
    unit_bytes: dict[str, np.ndarray]
    unit_chars: dict[str, np.ndarray]
    unit_words: dict[str, np.ndarray]


def load_run_data(db: Database, run_id: int) -> RunData:
    run = get_run(db, run_id)
    counts: dict[tuple[str, int], dict[str, np.ndarray]] = {}
    for vocab, size, lang, units in load_counts(db, run_id):
        counts.setdefault((vocab, size), {})[lang] = np.asarray(units, dtype=np.int64)
    measured = run.measured_units
    position = {unit: i for i, unit in enumerate(measured)}
    shape = len(measured)
    unit_bytes, unit_chars, unit_words = {}, {}, {}
    for lang in run.languages:
        b, c, w = np.zeros(shape, np.int64), np.zeros(shape, np.int64), np.zeros(shape, np.int64)
        rows = db.execute(f"SELECT unit, bytes, chars, text FROM {Text.__tablename__} "
                          "WHERE corpus_id = ? AND lang = ?", [run.run.corpus_id, lang])
        for unit, n_bytes, n_chars, text in rows:
            if unit in position:
                i = position[unit]
                b[i], c[i], w[i] = n_bytes, n_chars, len(text.split())
        unit_bytes[lang], unit_chars[lang], unit_words[lang] = b, c, w
    return RunData(run, counts, unit_bytes, unit_chars, unit_words)


def language_metrics(data: RunData, resamples: int = RESAMPLES) -> pd.DataFrame:
    """One row per (vocab, size, lang) with tokens, bytes, premiums, spread and confidence."""
    pivot = data.run.run.pivot
    n_units = len(data.run.measured_units)
    weights = bootstrap_weights(n_units, resamples, data.run.run.seed)
    rows = []
    for (vocab, size), by_lang in data.counts.items():
        langs = [lang for lang in data.run.languages if lang in by_lang]
        tokens = np.vstack([by_lang[lang] for lang in langs])  # langs x units
        boot = tokens @ weights.T  # langs x resamples: each resample's total tokens
        p = langs.index(pivot) if pivot in langs else None
        for i, lang in enumerate(langs):
            row = _row(vocab, size, lang, tokens[i], data, lang_separates=separates_words(lang))
            if p is not None:
                unit_premium = tokens[i] / tokens[p]
                boot_premium = boot[i] / boot[p]
                pivot_bytes = data.unit_bytes[pivot].sum()
                row.update(
                    premium=tokens[i].sum() / tokens[p].sum(),
                    byte_premium=row["bytes"] / pivot_bytes,
                    pivot_bytes_per_token=pivot_bytes / tokens[p].sum(),
                    unit_premium_median=float(np.median(unit_premium)),
                    unit_premium_q1=float(np.percentile(unit_premium, 25)),
                    unit_premium_q3=float(np.percentile(unit_premium, 75)),
                    premium_ci_low=float(np.percentile(boot_premium, 2.5)),
                    premium_ci_high=float(np.percentile(boot_premium, 97.5)),
                )
            rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["overhead"] = frame["premium"] - 1
    frame["unit_premium_iqr"] = frame["unit_premium_q3"] - frame["unit_premium_q1"]
    frame["gini"] = frame.groupby(["vocab", "size"])["premium"].transform(gini)
    return frame


def _row(vocab: str, size: int, lang: str, tokens: np.ndarray, data: RunData,
         lang_separates: bool) -> dict:
    n_tokens = int(tokens.sum())
    n_bytes = int(data.unit_bytes[lang].sum())
    n_chars = int(data.unit_chars[lang].sum())
    words = int(data.unit_words[lang].sum())
    return {
        "vocab": vocab, "size": size, "lang": lang, "tokens": n_tokens, "bytes": n_bytes,
        "chars": n_chars, "bytes_per_token": n_bytes / n_tokens, "chars_per_token": n_chars / n_tokens,
        "fertility": n_tokens / words if lang_separates and words else float("nan"),
        "fertility_applicable": lang_separates,
        "premium": float("nan"), "byte_premium": float("nan"),
    }


def own_vocabulary(frame: pd.DataFrame, pivot: str) -> pd.DataFrame:
    """Per (size, lang): tokens under the language's own vocabulary, beside the shared one,
    and the own-vocabulary premium against the pivot's own vocabulary."""
    own = frame[frame["vocab"] == frame["lang"]][["size", "lang", "tokens"]]
    own = own.rename(columns={"tokens": "own_tokens"})
    shared = frame[frame["vocab"] == "shared"][["size", "lang", "tokens"]]
    merged = shared.rename(columns={"tokens": "shared_tokens"}).merge(own, on=["size", "lang"])
    pivot_own = merged[merged["lang"] == pivot].set_index("size")["own_tokens"]
    merged["own_premium"] = merged["own_tokens"] / merged["size"].map(pivot_own)
    merged["sharing_cost"] = merged["shared_tokens"] / merged["own_tokens"] - 1
    return merged


def tokenizer_names(frame: pd.DataFrame, languages: list[str]) -> list[str]:
    """The production tokenizers in a run's frame: vocabularies neither shared nor a language's."""
    return [v for v in dict.fromkeys(frame["vocab"]) if v != "shared" and v not in languages]

