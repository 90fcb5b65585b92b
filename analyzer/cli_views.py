"""How the CLI shows runs: rich tables and the documented JSON records. No logic of its own
beyond formatting; the numbers come from `analyzer.metrics`."""

from __future__ import annotations

import math

import pandas as pd
from rich.markup import escape
from rich.table import Table

from analyzer.corpus import language_name
from analyzer.metrics import own_vocabulary
from analyzer.store import RunSummary
from analyzer.store.models import Vocabulary

RECORD_KEYS = ["vocab", "size", "lang", "tokens", "bytes", "chars", "premium", "overhead",
               "byte_premium", "bytes_per_token", "chars_per_token", "fertility",
               "unit_premium_median", "unit_premium_q1", "unit_premium_q3", "premium_ci_low",
               "premium_ci_high", "gini"]


def records(frame: pd.DataFrame) -> list[dict]:
    """The documented JSON records: one per (vocab, size, lang); NaN becomes null."""
    if frame.empty:
        return []
    out = []
    for row in frame[RECORD_KEYS].to_dict(orient="records"):
        out.append({key: _plain(value) for key, value in row.items()})
    return out


def run_json(run: RunSummary, frame: pd.DataFrame) -> dict:
    r = run.run
    return {"run": r.id, "corpus": run.corpus, "status": r.status, "pivot": r.pivot,
            "languages": run.languages, "sizes": run.sizes, "holdout": r.holdout, "seed": r.seed,
            "records": records(frame)}


def run_list_json(run: RunSummary) -> dict:
    r = run.run
    return {"id": r.id, "corpus": run.corpus, "status": r.status, "languages": run.languages,
            "pivot": r.pivot, "sizes": run.sizes, "per_language": bool(r.per_language),
            "cross": bool(r.cross_matrix), "holdout": r.holdout, "seed": r.seed,
            "tie_break": r.tie_break, "min_pair_count": r.min_pair_count, "started": r.started,
            "finished": r.finished, "seconds": r.seconds, "error": r.error}


def summary_table(run: RunSummary, frame: pd.DataFrame, vocab: str = "shared",
                  sizes: list[int] | None = None) -> Table:
    """Language, bytes, and per size: tokens and overhead vs the pivot under `vocab`; with the
    shared vocabulary, also each language's tokens under its own vocabulary."""
    sizes = sizes or run.sizes
    rows = frame[(frame["vocab"] == vocab) & frame["size"].isin(sizes)]
    largest = max(sizes)
    own = own_vocabulary(frame, run.run.pivot) if vocab == "shared" else pd.DataFrame()
    own = own[own["size"] == largest].set_index("lang") if not own.empty else own
    title = (f"Run {run.run.id} on {run.corpus}: tokens and overhead vs {run.run.pivot} "
             f"({'shared' if vocab == 'shared' else vocab + ' vocabulary'})")
    table = Table("language", "bytes", *[f"size {s}" for s in sizes], title=escape(title))
    if not own.empty:
        table.add_column(f"own vocab ({largest})")
    at_largest = rows[rows["size"] == largest].set_index("lang")["premium"]
    order = sorted(rows["lang"].unique(), key=lambda lang: (lang != run.run.pivot,
                                                            -at_largest.get(lang, 0)))
    for lang in order:
        cells = [f"{lang} {escape(language_name(lang))}"]
        by_size = rows[rows["lang"] == lang].set_index("size")
        cells.append(f"{int(by_size['bytes'].iloc[0]):,}")
        for size in sizes:
            row = by_size.loc[size]
            cells.append(f"{int(row['tokens']):,} ({_percent(row['overhead'])})")
        if not own.empty:
            cells.append(f"{int(own.loc[lang, 'own_tokens']):,}" if lang in own.index else "-")
        table.add_row(*cells)
    return table


def early_stops(vocabularies: list[Vocabulary], sizes: list[int]) -> list[str]:
    """Say which vocabularies stopped before the largest size, so nobody reads a flat curve
    as a finding: one sentence for the shared one, one for all per-language ones."""
    stopped = []
    for v in vocabularies:
        final = 256 + (v.merges_learned or 0)
        if v.stop_reason == "min_pair_count" and final < max(sizes):
            stopped.append((v.scope, final))
    notes = [f"the shared vocabulary stopped at size {final}: no pair occurs often enough; "
             f"its larger sizes equal size {final}" for scope, final in stopped if scope == "shared"]
    own = [f"{scope} at {final}" for scope, final in stopped if scope != "shared"]
    if own:
        notes.append(f"{len(own)} per-language vocabularies stopped before size {max(sizes)} "
                     f"(no pair occurs often enough; larger sizes equal the final one): "
                     + ", ".join(own))
    return notes


def _percent(overhead: float) -> str:
    return "n/a" if overhead is None or math.isnan(overhead) else f"{overhead:+.0%}"


def _plain(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        value = value.item()
        if isinstance(value, float) and math.isnan(value):
            return None
    return value


def token_report(run: RunSummary, frame: pd.DataFrame, vocabs: list[Vocabulary]) -> dict:
    """The seed's token_report, generalised to any number of languages: per language its
    chars and bytes, tokens under shared and under its own vocabulary, bytes per token and
    the curve over sizes; rules learned per vocabulary; and whether every text round-tripped."""
    largest = max(run.sizes)
    shared = frame[frame["vocab"] == "shared"]
    languages = {}
    for lang in run.languages:
        rows = shared[shared["lang"] == lang].set_index("size")
        own = frame[(frame["vocab"] == lang) & (frame["lang"] == lang)].set_index("size")
        languages[lang] = {
            "name": language_name(lang),
            "chars": int(rows["chars"].iloc[0]),
            "bytes": int(rows["bytes"].iloc[0]),
            "tokens_shared": int(rows.loc[largest, "tokens"]),
            "tokens_own": int(own.loc[largest, "tokens"]) if not own.empty else None,
            "bytes_per_token_shared": float(rows.loc[largest, "bytes_per_token"]),
            "bytes_per_token_own": float(own.loc[largest, "bytes_per_token"]) if not own.empty else None,
            "curve": [[int(size), int(rows.loc[size, "tokens"])] for size in run.sizes],
        }
    return {
        "pivot": run.run.pivot,
        "size": largest,
        "languages": languages,
        "rules_learned": {v.scope: v.merges_learned for v in vocabs},
        "roundtrip_ok": all(v.roundtrip_ok for v in vocabs if v.roundtrip_ok is not None),
    }
