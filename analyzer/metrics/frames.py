"""The run's numbers as pandas frames: one row per (vocabulary, size, language).

premium = tokens(L) / tokens(pivot) over the same units, under the same vocabulary;
byte premium = bytes(L) / bytes(pivot); and premium = byte premium x (bytes per token of the
pivot / bytes per token of L), which splits the tax into the script's part and the
vocabulary's part.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzer.external.catalog import catalog
from analyzer.identity import SHARED_SCOPE, Role, VocabKind, VocabularyId
from analyzer.store import IMPORTED_SIZE, RunRead, VocabularyRead

from .allocation import allocation_frame
from .data import RunData
from .stats import gini, separates_words

RESAMPLES = 1000

PREMIUM_ESTIMATOR = "ratio of totals"
"""The estimator of `premium` (the default, in every face), in the words every face names it
by: a language's tokens summed over the measured units, over the pivot's (Petrov et al. 2023)."""

UNIT_ESTIMATOR = "mean of unit ratios"
"""The estimator of `unit_premium`: each unit's tokens over the pivot's for that unit, averaged
over the units (tokentax reports it beside the ratio of totals). It weighs a short unit as much
as a long one, so it differs from the ratio of totals where a language's premium varies with
a unit's length."""


def estimators(run: RunRead) -> dict[str, str | None]:
    """Which estimator each premium field of the records is (`show --json`, `export`): null
    for `unit_premium` in a run of joined counts, which has none."""
    return {"premium": PREMIUM_ESTIMATOR,
            "unit_premium": None if run.count == "joined" else UNIT_ESTIMATOR}


def estimators_note(run: RunRead, where: str) -> str:
    """Which estimator the premiums shown are, and `where` the face shows the other one, in a
    sentence every face that shows a premium prints (`show`, the report, the results page):
    the same words in each."""
    if run.count == "joined":
        return (f"Premiums are the {PREMIUM_ESTIMATOR} (each language's joined text's tokens "
                f"over the reference's; Petrov et al. 2023); there is no {UNIT_ESTIMATOR}: each "
                "language was counted as one text.")
    return (f"Premiums are the {PREMIUM_ESTIMATOR} (a language's tokens over the reference's, "
            f"summed over the same units; Petrov et al. 2023); the {UNIT_ESTIMATOR} (each "
            f"unit's ratio, averaged; tokentax's) is {where}.")


def measured_kinds() -> list[VocabKind]:
    """The kinds of a real tokenizer's counts (production, imported), for selecting frame
    rows: asked each time, so that a plug-in's kind registered since counts too."""
    return [kind for kind in VocabKind if kind.measured]


def headline_vocabulary(run: RunRead, vocabs: list[VocabularyRead]) -> tuple[str, str | None, int]:
    """The (vocabulary, pre-tokenizer, size) a run's headline numbers are about: the shared
    vocabulary of the run's first pre-tokenizer at the largest size, or the first production
    tokenizer of a run that trained nothing, or else the first extension with every addition."""
    if run.sizes:
        return SHARED_SCOPE, run.pretokenizers[0], max(run.sizes)
    first = next((v for v in vocabs if v.kind.measured), None)
    if first is not None:
        return first.scope, None, first.size
    extension = next(v for v in vocabs if v.kind.extends)
    return extension.scope, extension.pretokenizer, extension.size  # its largest addition


def tokenizer_sizes(vocabs: list[VocabularyRead]) -> list[tuple[str, int]]:
    """The real tokenizers measured in a run, production and imported: (name, real vocabulary
    size; IMPORTED_SIZE for imported counts, whose size is not known), in order."""
    return [(v.scope, v.size) for v in vocabs if v.kind.measured]


def request_framing(vocabs: list[VocabularyRead]) -> dict[str, tuple[int | None, str | None]]:
    """Each real tokenizer's framing: `{name: (tokens a one-message request adds, how that is
    known)}`; (None, None) where it is not known (imported counts, a tokenizer of a file)."""
    return {v.scope: (v.framing, v.framing_basis) for v in vocabs if v.kind.measured}


def counting_convention(run: RunRead) -> str:
    """How the run counted a language's tokens, in a sentence (`show`, the report)."""
    if run.count == "joined":
        return (f"joined: each language's {len(run.measured_units):,} measured units joined into "
                "one text (a space after each unit, one more between splits, as Petrov et al. "
                "2023 join FLORES's files) and counted once; the tokens, premiums and costs are "
                "those texts', the spreads of unit premiums the units' one by one, and there "
                "are no intervals")
    return (f"units: each of the {len(run.measured_units):,} measured units counted on its own, "
            "a language's counts summed; intervals from resampling the units")


def special_tokens_counted(run: RunRead, vocabs: list[VocabularyRead]) -> str:
    """Whether production tokenizers' added special tokens are in their counts, and which add
    any (`show`, the report)."""
    adding = [f"{v.scope} +{v.special_tokens}" for v in vocabs
              if v.kind.production and v.special_tokens]
    per = "per counted text (each unit, or each joined text)"
    if run.special_tokens:
        return (f"counted, {per}: {', '.join(adding)}" if adding
                else "counted (none of the run's tokenizers adds any)")
    return ("not counted (a text's own tokens only)"
            + (f"; their libraries would add {', '.join(adding)} {per}" if adding else ""))


def tokenizer_models(name: str) -> list[str]:
    """The models that count with a catalog tokenizer (`CatalogEntry.models`); none for any
    other name (a tokenizer file of the user's own, a hub repository's, a trained vocabulary).
    Read from the catalog when shown, not stored with a run: a catalog name is its pinned
    files, whatever run measured them, and the models released on them keep coming.

    >>> tokenizer_models("llama3"), tokenizer_models("my-tokenizer.json")
    (['Llama 3', 'Llama 3.1', 'Llama 3.2', 'Llama 3.3'], [])
    """
    found = catalog().get(name)
    return list(found.models) if found else []


def tokenizer_label(name: str, size: int | None = None, *, short: bool = False) -> str:
    """A real tokenizer as every face names it: a catalog tokenizer with the models that count
    with it, since readers know it by them, not by its encoding's name (`short`, where space is
    tight: the first, and `…` for the rest); imported counts marked so; any other with its size
    when given. The name alone stays the key (JSON, CSV, `--vocab`): this is for reading.

    >>> print(tokenizer_label("cl100k_base"))
    cl100k_base (GPT-4, GPT-4 Turbo, GPT-3.5 Turbo, text-embedding-3, text-embedding-ada-002)
    >>> tokenizer_label("cl100k_base", short=True)
    'cl100k_base (GPT-4…)'
    >>> tokenizer_label("tokenizer.json", 32000), tokenizer_label("claude-4", IMPORTED_SIZE)
    ('tokenizer.json (32,000)', 'claude-4 (imported)')
    """
    if size == IMPORTED_SIZE:
        return f"{name} (imported)"
    models = tokenizer_models(name)
    if models:
        shown = models[0] + ("…" if len(models) > 1 else "") if short else ", ".join(models)
        return f"{name} ({shown})"
    return name if size is None else f"{name} ({size:,})"


def language_metrics(data: RunData, resamples: int = RESAMPLES) -> pd.DataFrame:
    """One row per (vocab, size, lang) with tokens, bytes, premiums, spread and confidence.

    `premium` is the ratio of totals (`PREMIUM_ESTIMATOR`), `unit_premium` the mean of unit
    ratios (`UNIT_ESTIMATOR`), each with its 95 % interval over the same resamples of the units.

    A run that counted joined texts (`count` joined) has each language's tokens, bytes and
    characters those of its joined text, and the premiums theirs; the spread of the units'
    premiums is still the units', and there is no interval (one text is not a sample) and no
    mean of unit ratios (the premium is not a total of units)."""
    pivot = data.run.pivot
    joined = data.joined_counts
    spreads = _spreads(data, resamples)
    spaces = data.joined_spaces if joined else 0  # what the join adds: a byte and a character each
    totals = {lang: (int(data.unit_bytes[lang].sum()) + spaces,
                     int(data.unit_chars[lang].sum()) + spaces,
                     int(data.unit_words[lang].sum())) for lang in data.run.languages}
    rows = []
    for key, by_lang in data.counts.items():
        vocab, pretokenizer, size = key
        langs = [lang for lang in data.run.languages if lang in by_lang]
        whole = data.totals(key, langs)
        p = langs.index(pivot) if pivot in langs else None
        kind = data.kind(vocab, pretokenizer)
        chunks = data.chunks.get(pretokenizer or "", {})
        if p is not None:
            premium = whole / whole[p]
            median, q1, q3, low, high, mean, mean_low, mean_high = spreads[key]
            pivot_bytes = totals[pivot][0]
        split = data.split_words.get(vocab, {}) if kind.measured else {}
        for i, lang in enumerate(langs):
            row = _row(vocab, pretokenizer, kind, size, lang, int(whole[i]), totals[lang])
            words = totals[lang][2]
            row["word_split_pct"] = 100 * split[lang] / words if lang in split and words \
                else float("nan")
            if lang in chunks and pivot in chunks:
                row["chunks"] = int(chunks[lang].sum())
                row["chunk_premium"] = chunks[lang].sum() / chunks[pivot].sum()
            if p is not None:
                row.update(
                    premium=float(premium[i]),
                    byte_premium=row["bytes"] / pivot_bytes,
                    pivot_bytes_per_token=pivot_bytes / whole[p],
                    unit_premium_median=float(median[i]),
                    unit_premium_q1=float(q1[i]),
                    unit_premium_q3=float(q3[i]),
                    premium_ci_low=float(low[i]),
                    premium_ci_high=float(high[i]),
                    unit_premium=float(mean[i]),
                    unit_premium_ci_low=float(mean_low[i]),
                    unit_premium_ci_high=float(mean_high[i]),
                )
            rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["overhead"] = frame["premium"] - 1
    allocation = allocation_frame(data.fairness.histograms if data.fairness else {})
    frame = frame.merge(allocation, on=["vocab", "pretokenizer", "size", "lang"], how="left")
    # each configuration's Gini, its rows found by group number (a groupby's transform made
    # a Series per group: a second at 400 configurations)
    groups = frame.groupby(["vocab", "pretokenizer", "size"], dropna=False, sort=False)
    premium = frame["premium"].to_numpy()
    found = np.empty(len(frame))
    for rows in groups.indices.values():
        found[rows] = gini(premium[rows])
    frame["gini"] = found
    for column in ("chunks", "chunk_premium"):
        if column not in frame:
            frame[column] = float("nan")
    return frame


_BLOCK = 4096
"""Languages' rows of premiums (each of a configuration's languages) taken through numpy's
percentile at once by `_spreads`: 4,096 rows of 1,000 units, 33 MB of float64."""


def _spreads(data: RunData, resamples: int) -> dict[tuple[str, str | None, int],
                                                    tuple[np.ndarray, ...]]:
    """Per configuration counted on the pivot, each of its languages' (as `on_pivot` lists
    them) median, first and third quartile of its units' premiums, the 95 % bootstrap
    interval of its premium, and the mean of its unit ratios (`UNIT_ESTIMATOR`) with its
    95 % interval over the same resamples (NaN for both: a run of joined counts, whose premium
    is one text's over another's, draws no interval and takes no mean of units).

    Configurations of as many languages go through each percentile together (a run's 400
    per-language vocabularies, each counted on its language and the pivot, made 1,600 calls),
    in blocks of rows: numpy's percentile along the last axis takes each row on its own, so
    every value is the one a call per configuration gives."""
    pivot = data.run.pivot
    boots = {} if data.joined_counts else data.bootstrap_totals(resamples)
    by_count: dict[int, list[tuple[tuple[str, str | None, int], list[str]]]] = {}
    for key in data.counts:
        if langs := data.on_pivot(key):
            by_count.setdefault(len(langs), []).append((key, langs))
    found: dict[tuple[str, str | None, int], tuple[np.ndarray, ...]] = {}
    for n, group in by_count.items():
        step = max(1, _BLOCK // n)
        for block in (group[start:start + step] for start in range(0, len(group), step)):
            units = np.stack([_per_pivot(np.vstack([data.counts[key][lang] for lang in langs]),
                                         langs.index(pivot)) for key, langs in block])
            median = np.median(units, axis=2)
            q1, q3 = np.percentile(units, [25, 75], axis=2)
            if data.joined_counts:
                low = high = mean = mean_low = mean_high = np.full((len(block), n), np.nan)
            else:  # each resample's total tokens, over the pivot's
                boot = np.stack([_per_pivot(boots[key], langs.index(pivot))
                                 for key, langs in block])
                low, high = np.percentile(boot, [2.5, 97.5], axis=2)
                ratios = np.stack([unit_ratios(np.vstack([data.counts[key][lang]
                                                          for lang in langs]),
                                               langs.index(pivot)) for key, langs in block])
                flat = ratios.reshape(-1, ratios.shape[2])
                mean = _defined_means(flat).reshape(len(block), n)
                means = data.bootstrap_means(flat, resamples).reshape(len(block), n, -1)
                mean_low, mean_high = np.percentile(means, [2.5, 97.5], axis=2)
            for k, (key, _) in enumerate(block):
                found[key] = (median[k], q1[k], q3[k], low[k], high[k],
                              mean[k], mean_low[k], mean_high[k])
    return found


def unit_ratios(rows: np.ndarray, pivot: int) -> np.ndarray:
    """Each language's tokens over the pivot's, unit by unit (languages x units), NaN where the
    pivot's unit has no tokens (an empty text: its ratio is not defined, and a mean of ratios
    leaves it out rather than take an infinity)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rows[pivot] > 0, rows / rows[pivot], np.nan)


def _defined_means(rows: np.ndarray) -> np.ndarray:
    """Each row's mean over its defined (not NaN) values; NaN for a row with none."""
    defined = ~np.isnan(rows)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(defined, rows, 0.0).sum(axis=1) / defined.sum(axis=1)


def _per_pivot(rows: np.ndarray, pivot: int) -> np.ndarray:
    """Each language's row over the pivot's, cell by cell."""
    return rows / rows[pivot]


def _row(vocab: str, pretokenizer: str | None, kind: VocabKind, size: int, lang: str,
         n_tokens: int, totals: tuple[int, int, int]) -> dict:
    n_bytes, n_chars, words = totals
    return {
        "vocab": vocab, "pretokenizer": pretokenizer, "kind": kind, "size": size, "lang": lang,
        "tokens": n_tokens,
        "bytes": n_bytes, "chars": n_chars, "bytes_per_token": n_bytes / n_tokens,
        "chars_per_token": n_chars / n_tokens,
        "fertility": n_tokens / words if separates_words(lang) and words else float("nan"),
        # Written without spaces: fertility per character instead (syllables are not counted).
        "char_fertility": float("nan") if separates_words(lang) or not n_chars
        else n_tokens / n_chars,
        "premium": float("nan"), "byte_premium": float("nan"),
    }


def trained_language(frame: pd.DataFrame) -> pd.Series:
    """The language each row's vocabulary was trained on alone (its `VocabularyId.language`;
    None for one of every language), read from its scope and kind."""
    pairs = {(vocab, kind): VocabularyId.parse(vocab, kind).language
             for vocab, kind in set(zip(frame["vocab"], frame["kind"], strict=True))}
    return pd.Series([pairs[pair] for pair in zip(frame["vocab"], frame["kind"], strict=True)],
                     index=frame.index, dtype=object)


def own_vocabulary(frame: pd.DataFrame, pivot: str) -> pd.DataFrame:
    """Per (pre-tokenizer, size, lang): tokens under the language's own vocabulary, beside the
    shared one, and the own-vocabulary premium against the pivot's own vocabulary."""
    keys = ["pretokenizer", "size", "lang"]
    own = frame[(frame["kind"] == Role.OWN.kind) & (trained_language(frame) == frame["lang"])]
    own = own[[*keys, "tokens"]].rename(columns={"tokens": "own_tokens"})
    shared = frame[frame["kind"] == Role.BASELINE.kind][[*keys, "tokens"]]
    merged = shared.rename(columns={"tokens": "shared_tokens"}).merge(own, on=keys)
    pivot_own = merged[merged["lang"] == pivot].set_index(["pretokenizer", "size"])["own_tokens"]
    index = pd.MultiIndex.from_frame(merged[["pretokenizer", "size"]])
    merged["own_premium"] = merged["own_tokens"].to_numpy() / pivot_own.reindex(index).to_numpy()
    return merged


def for_pretokenizer(frame: pd.DataFrame, pretokenizer: str) -> pd.DataFrame:
    """The rows of one pre-tokenizer's trained vocabularies, and every production tokenizer's:
    what a table or a chart about that split rule shows."""
    keep = (frame["pretokenizer"] == pretokenizer) | frame["kind"].isin(measured_kinds())
    return frame[keep]
