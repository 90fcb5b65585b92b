"""How the CLI shows runs: rich tables and the documented JSON records. No logic of its own
beyond formatting; the numbers come from `analyzer.metrics`."""

from __future__ import annotations

import math
import re

import pandas as pd
from rich import box
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from analyzer.corpus import language_name
from analyzer.metrics import own_vocabulary, tokenizer_names
from analyzer.store import RunSummary
from analyzer.store.models import Vocabulary

_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def plain(value) -> str:
    """Any value as literal terminal text: rich markup escaped, and control, line-breaking and
    direction-changing characters shown as escapes, so a name or a path from the data can
    neither restyle the output nor move the cursor or set the terminal's title.

    >>> print(plain("[bold]x\x1b]0;title\x07"))
    \\[bold]x\\x1b]0;title\\x07
    """
    text = _INVISIBLE.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"),
                          str(value))
    return escape(text)


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
    result = table("language", "bytes", *map(plain, headers), title=plain(title))
    if not own.empty:
        result.add_column(f"own vocab ({largest})")
    key = columns[-1] if vocab != "shared" or not run.sizes else ("shared", largest)
    present = [lang for lang in languages if (*key, lang) in cells.index]
    order = sorted(present, key=lambda lang: (lang != run.run.pivot, -cells.loc[(*key, lang), "premium"]))
    for lang in order:
        row = [f"{lang} {plain(language_name(lang))}", f"{int(cells.loc[(*key, lang), 'bytes']):,}"]
        for scope, size in columns:
            if (scope, size, lang) in cells.index:
                cell = cells.loc[(scope, size, lang)]
                row.append(f"{int(cell['tokens']):,} ({_percent(cell['overhead'])})")
            else:
                row.append("-")
        if not own.empty:
            row.append(f"{int(own.loc[lang, 'own_tokens']):,}" if lang in own.index else "-")
        result.add_row(*row)
    return result


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


def table(*headers: str, **options) -> Table:
    """A rich table whose cells wrap instead of being cut with an ellipsis, so that a narrow
    terminal (80 columns) shows every value whole."""
    result = Table(*headers, box=box.SIMPLE_HEAD, **options)
    for column in result.columns:
        column.overflow = "fold"
    return result


def runs_table(summaries: list[RunSummary], width: int = 80) -> Table:
    """The runs, one row each, whole in a terminal `width` columns wide: below 100 columns the
    pivot is left out and the start is shown without its year; long names wrap instead of being
    cut; sizes are shown as a range; errors are left to lines below the table."""
    wide = width >= 100
    headers = ["id", "corpus", "status", "langs", "sizes", *(["pivot"] if wide else []),
               "started (UTC)", "seconds"]
    result = table(*headers, pad_edge=False)
    for column in result.columns:
        column.no_wrap = column.header not in ("corpus", "sizes")
    for s in summaries:
        r = s.run
        started = r.started.replace("T", " ")[:16]
        result.add_row(str(r.id), plain(s.corpus), r.status, str(len(s.languages)),
                       compact_sizes(s.sizes), *([r.pivot] if wide else []),
                       started if wide else started[5:],
                       f"{r.seconds:.1f}" if r.seconds is not None else "-")
    return result


def compact_sizes(sizes: list[int]) -> str:
    """`256,512` as is; four or more sizes as their range and count.

    >>> compact_sizes([256, 512, 1024, 2048, 4096])
    '256..4096 (5)'
    >>> compact_sizes([])
    '-'
    """
    if not sizes:
        return "-"
    if len(sizes) <= 3:
        return ",".join(map(str, sizes))
    return f"{sizes[0]}..{sizes[-1]} ({len(sizes)})"


class VocabularyBars:
    """Progress of a run: one rich bar per vocabulary in a terminal; elsewhere (a log, a
    pipe) one plain line per step, so progress is still visible and can be read by a program:
    `shared: training 120/744`, `shared: counting`, `shared: done`."""

    def __init__(self, bars: Progress, *, plain_lines: bool = False):
        self.bars = bars
        self.plain_lines = plain_lines
        self.tasks: dict[str, int] = {}
        self.last_tenth: dict[str, int] = {}
        self.overall = bars.add_task("vocabularies", total=None)
        self.done = 0

    def _line(self, text: str) -> None:
        self.bars.console.print(plain(text), soft_wrap=True, highlight=False)

    def stage(self, message: str) -> None:
        self.bars.update(self.overall, description=plain(message))
        if self.plain_lines:
            self._line(message)

    def report(self, scope: str, phase: str, done: int, total: int) -> None:
        if self.plain_lines:
            if phase == "train":
                tenth = 10 * done // max(total, 1)
                if self.last_tenth.get(scope) != tenth:  # the first report, then every 10 %
                    self.last_tenth[scope] = tenth
                    self._line(f"{scope}: training {done}/{total}")
            else:
                self._line(f"{scope}: {'counting' if phase == 'count' else 'done'}")
            return
        task = self.tasks.get(scope)
        if task is None:
            task = self.tasks[scope] = self.bars.add_task(plain(scope), total=total)
        if phase == "train":
            self.bars.update(task, description=f"{plain(scope)}: training", completed=done,
                             total=total)
        elif phase == "count":
            self.bars.update(task, description=f"{plain(scope)}: counting")
        else:
            self.bars.remove_task(task)
            self.done += 1
            self.bars.update(self.overall, description=f"vocabularies done: {self.done}")
