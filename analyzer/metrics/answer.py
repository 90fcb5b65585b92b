"""The answer a reader comes for: what each language pays, under each vocabulary and tokenizer
of a run, as one table (`premium_table`), and the plain sentences that matter most in it
(`takeaways`).

A column is a vocabulary that counts every language, at its largest size (a trained one under
each pre-tokenizer; a production tokenizer; imported counts; an extension with all its added
tokens); a row is a language; a cell its premium, the tokens it needs for the same content
over the pivot's (the ratio of totals), with its interval, and the mean of unit ratios with
its own.
"""

from __future__ import annotations

import pandas as pd

from analyzer.corpus import language_name
from analyzer.identity import VocabKind

ANSWER_COLUMNS = ["column", "vocab", "pretokenizer", "size", "kind", "lang", "tokens", "premium",
                  "premium_ci_low", "premium_ci_high", "unit_premium", "unit_premium_ci_low",
                  "unit_premium_ci_high"]


def column_label(vocab: str, kind: VocabKind, pretokenizer: str | None, size: int,
                 several_rules: bool) -> str:
    """A column's name: a tokenizer by its name; a trained vocabulary with its size (and its
    pre-tokenizer, when the run has several).

    >>> column_label("shared", VocabKind("shared"), "words", 4096, several_rules=True)
    'shared 4,096 [words]'
    >>> column_label("o200k_base", VocabKind("production"), None, 200019, several_rules=True)
    'o200k_base'
    """
    if kind.named:
        return vocab
    rule = f" [{pretokenizer}]" if several_rules and pretokenizer else ""
    return f"{vocab} {size:,}{rule}"


def premium_table(frame: pd.DataFrame, pretokenizers: list[str]) -> pd.DataFrame:
    """One row per (column, language) in `ANSWER_COLUMNS` (see the module): the columns in the
    run's order, the real tokenizers first (what readers pay for), then what it trained."""
    if frame.empty:
        return pd.DataFrame(columns=ANSWER_COLUMNS)
    every = frame[frame["kind"].map(lambda kind: VocabKind(kind).counts_every_language)]
    largest = every.groupby(["vocab", "pretokenizer"], dropna=False, sort=False)["size"] \
        .transform("max")
    rows = every[every["size"] == largest].copy()
    several = len(pretokenizers) > 1
    rows["column"] = [column_label(row.vocab, VocabKind(row.kind), row.pretokenizer, row.size,
                                   several) for row in rows.itertuples()]
    rows["trained"] = [not VocabKind(kind).measured for kind in rows["kind"]]
    order = {vocab: index for index, vocab in enumerate(dict.fromkeys(rows["vocab"]))}
    rows["order"] = rows["vocab"].map(order)
    rows = rows.sort_values(["trained", "order"], kind="stable")
    return rows[ANSWER_COLUMNS].reset_index(drop=True)


def takeaways(table: pd.DataFrame, pivot: str) -> list[str]:
    """The two sentences that matter most in the table, in plain words with the numbers: how
    many languages pay more; who pays most, under what. Which column is cheapest and fairest
    is the verdicts' (`analyzer.metrics.verdicts`), which every face prints beside these."""
    others = table[table["lang"] != pivot]
    if others.empty:
        return ["One language only: nothing to compare."]
    home = language_name(pivot)
    columns = list(dict.fromkeys(table["column"]))
    worst_by_lang = others.groupby("lang")["premium"].min()
    paying = int((worst_by_lang > 1.005).sum())
    under = "every one of the" if len(columns) > 1 else "the"
    measured = {VocabKind(kind).measured for kind in table["kind"]}
    one, many = (("tokenizer", "tokenizers") if measured == {True} else
                 ("vocabulary", "vocabularies") if measured == {False} else
                 ("vocabulary", "vocabularies and tokenizers"))
    noun = many if len(columns) > 1 else one
    found = [f"{paying} of {len(worst_by_lang)} languages need more tokens than {home} for the "
             f"same content under {under} {len(columns) if len(columns) > 1 else ''} {noun} "
             "below.".replace("  ", " ")]
    top = others.loc[others["premium"].idxmax()]
    found.append(f"{language_name(top['lang'])} pays most: {premium_text(top['premium'])} the "
                 f"tokens of {home} under {top['column']}.")
    return found


def premium_text(premium: float) -> str:
    """A premium as every face writes it: the tokens over the pivot's, `2.31x`.

    >>> premium_text(2.3149), premium_text(float("nan"))
    ('2.31x', 'n/a')
    """
    return "n/a" if premium != premium else f"{premium:.2f}x"


__all__ = ["ANSWER_COLUMNS", "column_label", "premium_table", "premium_text",
           "takeaways"]
