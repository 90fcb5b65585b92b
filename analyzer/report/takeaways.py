"""What a run shows in a section, in one plain sentence with its numbers: the line a folded
section shows under its title, before its own description. Each is read from the run's
sections (`RunResults`); a section without one keeps its description alone.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from analyzer.corpus import language_name
from analyzer.identity import PARITY_SCOPE, SHARED_SCOPE, Role, VocabKind
from analyzer.metrics import RunResults, headline_vocabulary, premium_text, trained_language

Takeaway = Callable[[RunResults, pd.DataFrame], str]


def _shared_rows(results: RunResults) -> pd.DataFrame:
    frame = results.frame
    run = results.run
    return frame[(frame["vocab"] == SHARED_SCOPE) & (frame["pretokenizer"] == run.pretokenizers[0])
                 & (frame["lang"] != run.pivot)]


def overhead_by_size(results: RunResults, costs: pd.DataFrame) -> str:
    """How the highest premium moves from the smallest trained size to the largest."""
    rows = _shared_rows(results)
    sizes = sorted(results.run.sizes)
    if rows.empty or len(sizes) < 2:
        return ""
    first, last = (rows[rows["size"] == size] for size in (sizes[0], sizes[-1]))
    a, b = first.loc[first["premium"].idxmax()], last.loc[last["premium"].idxmax()]
    return (f"From {sizes[0]:,} to {sizes[-1]:,} tokens, the highest premium goes from "
            f"{premium_text(a['premium'])} ({language_name(a['lang'])}) to "
            f"{premium_text(b['premium'])} ({language_name(b['lang'])}).")


def production(results: RunResults, costs: pd.DataFrame) -> str:
    """Which real tokenizer charges whom most (which is fairest is the verdicts', at the top of
    the page)."""
    table = results.premium_table()
    measured = table[(table["kind"].map(lambda kind: VocabKind(kind).measured))
                     & (table["lang"] != results.run.pivot)]
    if measured.empty:
        return ""
    top = measured.loc[measured["premium"].idxmax()]
    return (f"{top['column']} charges {language_name(top['lang'])} most: "
            f"{premium_text(top['premium'])}.")


def model_costs(results: RunResults, costs: pd.DataFrame) -> str:
    """The dearest language on any priced model, in money."""
    others = costs[costs["lang"] != results.run.pivot]
    if others.empty:
        return ""
    top = others.loc[others["cost_ratio"].idxmax()]
    pivot = costs[(costs["model"] == top["model"]) & (costs["lang"] == results.run.pivot)]
    then = (f" (US${top['input_cost']:,.2f} against US${float(pivot['input_cost'].iloc[0]):,.2f} "
            f"of input at {top['model']}'s price of {top['date']})") if not pivot.empty else ""
    return (f"The same content costs {language_name(top['lang'])} "
            f"{premium_text(top['cost_ratio'])} what it costs {language_name(results.run.pivot)} "
            f"on {top['model']}{then}.")


def parity(results: RunResults, costs: pd.DataFrame) -> str:
    """What training for parity does at the largest size: the highest premium, and the cost."""
    summaries = results["summaries"]
    run = results.run
    if summaries.empty or not run.sizes:
        return ""
    size, rule = max(run.sizes), run.pretokenizers[0]
    at = summaries[(summaries["size"] == size) & (summaries["pretokenizer"] == rule)]
    shared, fair = (at[at["vocab"] == scope] for scope in (SHARED_SCOPE, PARITY_SCOPE))
    if shared.empty or fair.empty:
        return ""
    s, f = shared.iloc[0], fair.iloc[0]
    more = f["tokens"] / s["tokens"] - 1
    return (f"Training for parity at {size:,} brings the highest premium from "
            f"{premium_text(s['worst_premium'])} to {premium_text(f['worst_premium'])} for "
            f"{more:+.1%} tokens in all.")


def equal_cost(results: RunResults, costs: pd.DataFrame) -> str:
    """How many languages reach the pivot's cost under the shared vocabulary, and who needs most."""
    run = results.run
    if len(run.sizes) < 2:
        return ""
    rows = [row for row in results.equal_cost_sizes(sorted(run.sizes)[-2])
            if row["vocab"] == SHARED_SCOPE and row["pretokenizer"] == run.pretokenizers[0]
            and row["lang"] != run.pivot]
    if not rows:
        return ""
    reached = [row for row in rows if row["size"] is not None]
    said = (f"Under the shared vocabulary, {len(reached)} of {len(rows)} languages reach "
            f"{language_name(run.pivot)}'s tokens at {rows[0]['reference_size']:,} within the "
            f"{max(run.sizes):,} trained")
    if reached:
        most = max(reached, key=lambda row: row["size"])
        said += f"; {language_name(most['lang'])} needs {most['size']:,}"
    return said + "."


def parity_gini(results: RunResults, costs: pd.DataFrame) -> str:
    """How much more evenly parity shares the tokens out: the Gini of premiums, both ways."""
    summaries = results["summaries"]
    run = results.run
    if summaries.empty or not run.sizes:
        return ""
    at = summaries[(summaries["size"] == max(run.sizes))
                   & (summaries["pretokenizer"] == run.pretokenizers[0])]
    shared, fair = (at[at["vocab"] == scope] for scope in (SHARED_SCOPE, PARITY_SCOPE))
    if shared.empty or fair.empty:
        return ""
    return (f"At {max(run.sizes):,}, parity takes the Gini of premiums from "
            f"{shared['gini'].iloc[0]:.3f} to {fair['gini'].iloc[0]:.3f} (0: every language "
            "pays the same).")


def bytes_or_vocabulary(results: RunResults, costs: pd.DataFrame) -> str:
    """The dearest language's premium split into its script's part and its vocabulary's."""
    rows = _shared_rows(results)
    if rows.empty:
        return ""
    at = rows[rows["size"] == max(results.run.sizes)]
    top = at.loc[at["premium"].idxmax()]
    carried = top["bytes_per_token"] / top["pivot_bytes_per_token"]  # premium = bytes / carried
    pivot = language_name(results.run.pivot)
    part = ("the vocabulary wins back part of the script's cost" if carried >= 1
            else "the vocabulary adds to the script's cost")
    return (f"At {max(results.run.sizes):,}, {language_name(top['lang'])} pays most, "
            f"{premium_text(top['premium'])}: its text takes {premium_text(top['byte_premium'])} "
            f"the UTF-8 bytes of {pivot}'s, and each of its tokens carries "
            f"{premium_text(carried)} the bytes of one of {pivot}'s ({part}).")


def shared_vs_own(results: RunResults, costs: pd.DataFrame) -> str:
    """Whom sharing the vocabulary costs most, against a vocabulary of its own."""
    frame, run = results.frame, results.run
    size = max(run.sizes)
    at = frame[(frame["size"] == size) & (frame["pretokenizer"] == run.pretokenizers[0])]
    own = at[(at["kind"] == Role.OWN.kind) & (trained_language(at) == at["lang"])]
    shared = at[at["vocab"] == SHARED_SCOPE].set_index("lang")["tokens"]
    cost = (shared / own.set_index("lang")["tokens"] - 1).dropna()
    if cost.empty:
        return ""
    return (f"At {size:,}, sharing the vocabulary costs {language_name(cost.idxmax())} most: "
            f"{cost.max():+.0%} tokens against a vocabulary of its own; the median language pays "
            f"{cost.median():+.0%}.")


def bytes_per_token(results: RunResults, costs: pd.DataFrame) -> str:
    """The most and the fewest bytes a token carries at the largest shared size."""
    frame, run = results.frame, results.run
    at = frame[(frame["vocab"] == SHARED_SCOPE) & (frame["pretokenizer"] == run.pretokenizers[0])
               & (frame["size"] == max(run.sizes))]
    if at.empty:
        return ""
    most, fewest = at.loc[at["bytes_per_token"].idxmax()], at.loc[at["bytes_per_token"].idxmin()]
    return (f"At {max(run.sizes):,}, a token carries {most['bytes_per_token']:.2f} bytes of "
            f"{language_name(most['lang'])} and {fewest['bytes_per_token']:.2f} of "
            f"{language_name(fewest['lang'])}.")


def steadiness(results: RunResults, costs: pd.DataFrame) -> str:
    """How precisely the premiums are measured: the widest 95 % interval, and the median width."""
    run = results.run
    vocab, rule, size = headline_vocabulary(run, results.data.vocabularies)
    frame = results.frame
    rows = frame[(frame["vocab"] == vocab) & (frame["size"] == size) & (frame["lang"] != run.pivot)]
    if rule is not None:
        rows = rows[rows["pretokenizer"] == rule]
    rows = rows.dropna(subset=["premium_ci_low", "premium_ci_high"])
    if rows.empty:
        return ""
    width = (rows["premium_ci_high"] - rows["premium_ci_low"]) / rows["premium"] / 2
    wide = rows.loc[width.idxmax()]
    return (f"Premiums here are measured to within {width.median():.1%} either way (the median "
            f"language); the widest interval is {language_name(wide['lang'])}'s, "
            f"{premium_text(wide['premium_ci_low'])} to {premium_text(wide['premium_ci_high'])}.")


TAKEAWAYS: dict[str, Takeaway] = {
    "Overhead against vocabulary size": overhead_by_size,
    "Production tokenizers": production,
    "What the same content costs, by model": model_costs,
    "What parity costs": parity,
    "Shared vs parity-aware": parity_gini,
    "Equal-cost vocabulary size": equal_cost,
    "Overhead by language: bytes or vocabulary?": bytes_or_vocabulary,
    "Shared vs own vocabulary": shared_vs_own,
    "Bytes per token": bytes_per_token,
    "How steady is the tax?": steadiness,
}
"""The sections whose first line is what this run shows, by title."""


def takeaway(title: str, results: RunResults, costs: pd.DataFrame) -> str:
    """The section's line of what this run shows ("" when it has none)."""
    said = TAKEAWAYS.get(title)
    return said(results, costs) if said is not None else ""
