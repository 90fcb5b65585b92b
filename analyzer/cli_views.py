"""How the CLI shows runs: rich tables and the documented JSON records. No logic of its own
beyond formatting; the numbers come from `analyzer.metrics`."""

from __future__ import annotations

import math

import pandas as pd
from rich.markup import escape
from rich.table import Table

from analyzer.corpus import language_name
from analyzer.metrics import own_vocabulary, tokenizer_names
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
    """Language, bytes, and per column tokens and overhead vs the pivot. The default view has a
    column per size of the shared vocabulary, one per production tokenizer, and each language's
    tokens under its own vocabulary; `vocab` shows one vocabulary's sizes instead."""
    languages = run.languages
    if vocab == "shared":
        columns = [("shared", s) for s in (sizes or run.sizes)]
        for name in tokenizer_names(frame, languages):
            columns.append((name, int(frame[frame["vocab"] == name]["size"].iloc[0])))
    else:
        own_sizes = sorted(frame[frame["vocab"] == vocab]["size"].unique())
        columns = [(vocab, int(s)) for s in own_sizes if not sizes or s in sizes]
    cells = frame.set_index(["vocab", "size", "lang"])
    largest = max(run.sizes) if run.sizes else None
    own = own_vocabulary(frame, run.run.pivot) if vocab == "shared" and run.sizes else pd.DataFrame()
    own = own[own["size"] == largest].set_index("lang") if not own.empty else own
    title = (f"Run {run.run.id} on {run.corpus}: tokens and overhead vs {run.run.pivot}"
             + ("" if vocab == "shared" else f" ({vocab} vocabulary)"))
    headers = [f"size {size}" if scope in ("shared", vocab) and scope not in
               tokenizer_names(frame, languages) else f"{scope} ({size:,})" for scope, size in columns]
    table = Table("language", "bytes", *map(escape, headers), title=escape(title))
    if not own.empty:
        table.add_column(f"own vocab ({largest})")
    key = columns[-1] if vocab != "shared" or not run.sizes else ("shared", largest)
    present = [lang for lang in languages if (*key, lang) in cells.index]
    order = sorted(present, key=lambda lang: (lang != run.run.pivot, -cells.loc[(*key, lang), "premium"]))
    for lang in order:
        row = [f"{lang} {escape(language_name(lang))}", f"{int(cells.loc[(*key, lang), 'bytes']):,}"]
        for scope, size in columns:
            if (scope, size, lang) in cells.index:
                cell = cells.loc[(scope, size, lang)]
                row.append(f"{int(cell['tokens']):,} ({_percent(cell['overhead'])})")
            else:
                row.append("-")
        if not own.empty:
            row.append(f"{int(own.loc[lang, 'own_tokens']):,}" if lang in own.index else "-")
        table.add_row(*row)
    return table


def early_stops(vocabularies: list[Vocabulary], sizes: list[int]) -> list[str]:
    """Say which vocabularies stopped before the largest size, so nobody reads a flat curve
    as a finding: one sentence for the shared one, one for all per-language ones."""
    stopped = []
    for v in vocabularies:
        if v.kind != "trained":
            continue
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
    the curve over sizes; each production tokenizer's tokens and premium per language; rules
    learned per vocabulary; and whether every measured text round-tripped."""
    cells = frame.set_index(["vocab", "size", "lang"])
    largest = max(run.sizes) if run.sizes else None
    languages = {}
    for lang in run.languages:
        any_row = frame[frame["lang"] == lang].iloc[0]
        entry = {"name": language_name(lang), "chars": int(any_row["chars"]),
                 "bytes": int(any_row["bytes"])}
        if largest is not None:
            shared = cells.loc[("shared", largest, lang)]
            own = cells.loc[(lang, largest, lang)] if (lang, largest, lang) in cells.index else None
            entry.update(
                tokens_shared=int(shared["tokens"]),
                tokens_own=None if own is None else int(own["tokens"]),
                bytes_per_token_shared=float(shared["bytes_per_token"]),
                bytes_per_token_own=None if own is None else float(own["bytes_per_token"]),
                curve=[[size, int(cells.loc[("shared", size, lang), "tokens"])] for size in run.sizes],
            )
        languages[lang] = entry
    tokenizers = {}
    for v in vocabs:
        if v.kind == "production":
            tokenizers[v.scope] = {
                "size": v.size, "library": v.library, "source": v.source,
                "languages": {lang: {"tokens": int(cells.loc[(v.scope, v.size, lang), "tokens"]),
                                     "premium": _plain(cells.loc[(v.scope, v.size, lang), "premium"])}
                              for lang in run.languages}}
    return {
        "pivot": run.run.pivot,
        "size": largest,
        "languages": languages,
        "tokenizers": tokenizers,
        "rules_learned": {v.scope: v.merges_learned for v in vocabs if v.kind == "trained"},
        "roundtrip_ok": all(v.roundtrip_ok for v in vocabs if v.roundtrip_ok is not None),
    }
