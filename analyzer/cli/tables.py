"""How the command line shows things in tables (rich). Formatting only: the numbers come from
`analyzer.metrics`, the documents from `analyzer.export`."""

from __future__ import annotations

import math
import re

import pandas as pd
from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from analyzer.bpe.pretokenize import NONE
from analyzer.corpus import language_name
from analyzer.external import Availability
from analyzer.external.catalog import FramingBasis
from analyzer.identity import PARITY_SCOPE, SHARED_SCOPE
from analyzer.metrics import (
    for_pretokenizer,
    own_vocabulary,
    tokenizer_label,
    tokenizer_sizes,
)
from analyzer.store import CorpusDetail, RunRead, SourceDetail, VocabularyRead

from .formats import compact_sizes, percent, plain, with_interval

WHOLE = re.compile(r"\b(file|path|url|source|corpus|tokenizer|name|id|language|token)s?\b")
"""A column whose header says it names things (files, paths, corpora, tokenizers, ...) is
never wrapped: a name or a path cut across lines cannot be copied, nor found by a program."""


def _longest(cell, whole: bool) -> int:
    """The columns that `cell` needs: its longest line when `whole`, else its longest word."""
    text = cell.plain if isinstance(cell, Text) else Text.from_markup(cell).plain \
        if isinstance(cell, str) else ""
    pieces = text.splitlines() if whole else text.split()
    return max(map(cell_len, pieces), default=0)


class WholeTable(Table):
    """A rich table that never breaks a word, a header, or any cell of a column that names
    things (`WHOLE`): each column is at least that wide, even when the table is then wider
    than the terminal (the command line's Console prints it whole, for the terminal to wrap;
    a pipe gets every line whole). Other cells wrap between words. Widths are found when the
    table is printed, so rows and columns can be added in any way."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for column in self.columns:
            whole = column.no_wrap or bool(WHOLE.search(str(column.header)))
            column.no_wrap = whole
            column.min_width = max(column.min_width or 0, _longest(column.header, True),
                                   *(_longest(cell, whole) for cell in column.cells))
        yield from super().__rich_console__(console, options)


def new_table(*headers: str, **options) -> Table:
    """A `WholeTable` in the command line's style: no identifier or word is cut across lines,
    and no value is cut short with an ellipsis."""
    result = WholeTable(*headers, box=box.SIMPLE_HEAD, **options)
    for column in result.columns:
        column.overflow = "fold"  # a last resort, never needed: every column fits its words
    return result


def languages_table(corpus: CorpusDetail) -> Table:
    result = new_table("language", "name", "units", "bytes", "characters", "bytes/char")
    for stats in corpus.language_stats:
        result.add_row(stats.lang, plain(stats.name), f"{stats.units:,}", f"{stats.bytes:,}",
                       f"{stats.chars:,}", f"{stats.bytes_per_char:.2f}")
    return result


def source_languages_table(source: SourceDetail) -> Table:
    found = new_table("language", "name", "files", "bytes", "documents")
    for item in source.language_stats:
        found.add_row(item.lang, plain(item.name), f"{item.files:,}", f"{item.bytes:,}",
                      f"{item.documents:,}")
    return found


SUMMARY_CELL = 16
"""Columns a cell such as `12,345 (+123%)` takes, padding included."""


def summary_tables(run: RunRead, frame: pd.DataFrame, vocabs: list[VocabularyRead],
                   vocab: str = SHARED_SCOPE, sizes: list[int] | None = None,
                   pretokenizer: str = NONE, tokenizers: bool = True,
                   width: int = 80) -> list[Table]:
    """Language, bytes, and per column tokens and overhead vs the pivot, under one
    pre-tokenizer. The default view has a column per size of the shared vocabulary, one per
    production tokenizer (with `tokenizers`), and each language's tokens under its own
    vocabulary; `vocab` shows one vocabulary's sizes instead. Columns that do not fit in
    `width` go on to further tables, each with the languages again, rather than being squeezed
    until no number can be read."""
    frame = for_pretokenizer(frame, pretokenizer)
    production = tokenizer_sizes(vocabs) if tokenizers else []
    overview = vocab == SHARED_SCOPE
    if overview:
        trained = [SHARED_SCOPE] + ([PARITY_SCOPE] if run.parity else [])
        columns = [(scope, s) for scope in trained for s in (sizes or run.sizes)] + production
    else:
        own_sizes = sorted(frame[frame["vocab"] == vocab]["size"].unique())
        columns = [(vocab, int(s)) for s in own_sizes if not sizes or s in sizes]
    if not columns:  # a run that only extends production tokenizers: extension_tables
        return []
    names = {name for name, _ in production}
    cells = frame.set_index(["vocab", "size", "lang"])
    largest = max(run.sizes) if run.sizes else None
    own = own_vocabulary(frame, run.pivot) if overview and run.sizes else pd.DataFrame()
    own = own[own["size"] == largest].set_index("lang") if not own.empty else own
    title = (f"Run {run.id} on {run.corpus}: tokens and overhead vs {run.pivot}"
             + ("" if overview else f" ({vocab} vocabulary)")
             + ("" if pretokenizer == NONE else f", pre-tokenizer {pretokenizer}"))
    key = columns[-1] if not overview or not run.sizes else (SHARED_SCOPE, largest)
    present = [lang for lang in run.languages if (*key, lang) in cells.index]
    order = sorted(present, key=lambda lang: (lang != run.pivot, -cells.loc[(*key, lang), "premium"]))
    extra = [(f"own vocab ({largest})", lambda lang: f"{int(own.loc[lang, 'own_tokens']):,}"
              if lang in own.index else "-")] if not own.empty else []
    fits = max(1, (width - 24 - SUMMARY_CELL * len(extra)) // SUMMARY_CELL)
    chunks = [columns[start:start + fits] for start in range(0, len(columns), fits)] or [[]]
    result = []
    for number, chunk in enumerate(chunks):
        headers = [tokenizer_label(scope, size) if scope in names else
                   f"parity {size}" if scope == PARITY_SCOPE else f"size {size}"
                   for scope, size in chunk]
        part = new_table("language", "bytes", *map(plain, headers), title=plain(
            title if number == 0 else f"{title} (continued, {number + 1} of {len(chunks)})"))
        last = number == len(chunks) - 1
        for header, _ in extra if last else []:
            part.add_column(header, overflow="fold")
        for lang in order:
            row = [f"{lang} {plain(language_name(lang))}", f"{int(cells.loc[(*key, lang), 'bytes']):,}"]
            for scope, size in chunk:
                if (scope, size, lang) in cells.index:
                    cell = cells.loc[(scope, size, lang)]
                    row.append(f"{int(cell['tokens']):,} ({percent(cell['overhead'])})")
                else:
                    row.append("-")
            row += [value(lang) for _, value in extra] if last else []
            part.add_row(*row)
        result.append(part)
    return result


def extension_tables(effects: pd.DataFrame, reached: pd.DataFrame, pivot: str,
                     target: float | None) -> list[Table]:
    """Per extended tokenizer: each language's premium with the base and at every added size,
    and the added tokens that bring it within 10 % of the pivot (and to the target)."""
    result = []
    for vocab, rows in effects.groupby("vocab", sort=False):
        sizes = sorted(int(n) for n in rows["added"].unique() if n > 0)
        premiums = rows.set_index(["added", "lang"])["premium"]
        found = reached[reached["vocab"] == vocab].set_index("lang")
        headers = ["language", "base", *(f"+{n:,}" for n in sizes), "to within 10 %"]
        if target:
            headers.append(f"to {target:g}")
        part = new_table(*headers, title=plain(f"{vocab}: premium vs {pivot} by tokens added "
                                           "(* trains the additions)"))
        order = sorted(found.index, key=lambda lang: (lang != pivot, -found.loc[lang, "base_premium"]))
        for lang in order:
            row = found.loc[lang]
            mark = "*" if row["trained_on"] else ""
            cells = [f"{lang}{mark} {plain(language_name(lang))}", f"{row['base_premium']:.2f}"]
            cells += [f"{premiums.get((n, lang), math.nan):.2f}" for n in sizes]
            cells.append(_added(row["to_within"], int(row["merges"])))
            if target:
                cells.append(_added(row["to_target"], int(row["merges"])))
            part.add_row(*cells)
        result.append(part)
    return result


def _added(value, merges: int) -> str:
    """Added tokens reaching a goal: `+N`, `base` (none needed), or beyond the trained ones."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return f"not within +{merges:,}"
    return "base" if int(value) == 0 else f"+{int(value):,}"


def frontier_table(configurations: pd.DataFrame) -> Table:
    """Every configuration, those on the frontier first, each by cost: its cost against the
    reference and its Gini (95 % intervals), and the language it charges most."""
    from analyzer.metrics import configuration_name

    result = new_table("configuration", "cost", "Gini", "charges most", "frontier",
                   title="Cost against fairness (tokens of all languages vs the reference; "
                         "95 % intervals)")
    ordered = configurations.dropna(subset=["cost"]).sort_values(["frontier", "cost"],
                                                                 ascending=[False, True])
    for _, row in ordered.iterrows():
        result.add_row(
            plain(configuration_name(row)),
            with_interval(row["cost"] - 1, row["cost_ci_low"] - 1, row["cost_ci_high"] - 1, "+.1%"),
            with_interval(row["gini"], row["gini_ci_low"], row["gini_ci_high"], ".3f"),
            f"{row['worst_lang']} {row['worst_premium']:.2f}x", "yes" if row["frontier"] else "")
    return result


def algorithm_tables(premiums: pd.DataFrame, pivot: str) -> list[Table]:
    """Per pre-tokenizer: each language's premium (tokens vs the pivot's) under each
    algorithm's vocabulary trained on every language, at every size, and each script's tokens
    against BPE's."""
    from analyzer.metrics import by_script

    tables = []
    for pretokenizer, rows in premiums.groupby("pretokenizer", sort=False):
        cells = rows.set_index(["lang", "size", "algorithm"])["premium"]
        columns = list(dict.fromkeys(zip(rows["size"], rows["algorithm"])))
        split = "" if pretokenizer == "none" else f", pre-tokenizer {pretokenizer}"
        result = new_table("language", "script", *[f"{algorithm} {size:,}" for size, algorithm in columns],
                       title=plain(f"Premium vs {pivot} by algorithm{split}"))
        order = (rows[rows["algorithm"] == "bpe"].sort_values("premium", ascending=False)["lang"]
                 .drop_duplicates())
        for lang in order:
            script = rows[rows["lang"] == lang]["script"].iloc[0]
            result.add_row(plain(lang), plain(script),
                           *[f"{cells.get((lang, size, algorithm), float('nan')):.2f}x"
                             for size, algorithm in columns])
        tables.append(result)
        scripts = by_script(rows)
        others = scripts[scripts["algorithm"] != "bpe"]
        if not others.empty:
            compared = list(dict.fromkeys(zip(others["size"], others["algorithm"])))
            result = new_table("script", "languages",
                           *[f"{algorithm} {size:,} vs bpe" for size, algorithm in compared],
                           title=plain(f"Tokens against BPE's, per script{split}"))
            change = others.set_index(["script", "size", "algorithm"])["vs_bpe"]
            for script, part in others.groupby("script", sort=True):
                result.add_row(plain(script), str(int(part["languages"].iloc[0])),
                               *[f"{change.get((script, size, algorithm), float('nan')):+.1%}"
                                 for size, algorithm in compared])
            tables.append(result)
    return tables


def attribution_table(shares: pd.DataFrame, vocab: str) -> Table:
    """Who got the vocabulary: per language (most merges first), its share of the merges, of
    the replaced occurrences and of the training bytes, its first merge, and (parity-aware) the
    share of merges chosen for it."""
    parity = vocab == PARITY_SCOPE
    result = new_table("language", "merges", "occurrences", "training bytes", "first merge",
                   *(["chosen for it"] if parity else []),
                   title=plain(f"Who got the {vocab} vocabulary"))
    for row in shares.sort_values("merges_share", ascending=False).itertuples():
        first = "-" if row.first_merge is None or row.first_merge != row.first_merge \
            else f"{int(row.first_merge):,}"
        result.add_row(f"{row.lang} {plain(language_name(row.lang))}", f"{row.merges_share:.1%}",
                       f"{row.occurrences_share:.1%}", f"{row.bytes_share:.1%}", first,
                       *([f"{row.chosen_share:.1%}"] if parity else []))
    return result


def served_most(served: dict[str, list[int]], rank: int, chosen: list[str | None]) -> str:
    """Which language a merge served most (its share of the occurrences replaced), and for
    whom a parity-aware merge was chosen.

    >>> served_most({"eng": [3, 0], "kor": [1, 2]}, 0, ["kor", None])
    'chosen for kor; eng 75%'
    """
    total = sum(values[rank] for values in served.values())
    lang = max(served, key=lambda code: served[code][rank])
    share = f"{lang} {served[lang][rank] / total:.0%}" if total else "no occurrence"
    who = chosen[rank] if rank < len(chosen) else None
    return f"chosen for {who}; {share}" if who else share


def runs_table(summaries: list[RunRead], width: int = 80) -> Table:
    """The runs, one row each, whole in a terminal `width` columns wide: below 100 columns the
    pivot is left out and the start is shown without its year; long names wrap instead of being
    cut; sizes are shown as a range; errors are left to lines below the table."""
    wide = width >= 100
    headers = ["id", "corpus", "status", "langs", "sizes", *(["pivot"] if wide else []),
               "started (UTC)", "seconds"]
    result = new_table(*headers, pad_edge=False)
    for column in result.columns:
        column.no_wrap = column.header not in ("corpus", "sizes")
    for r in summaries:
        started = r.started.replace("T", " ")[:16]
        result.add_row(str(r.id), plain(r.corpus), r.status, str(len(r.languages)),
                       compact_sizes(r.sizes), *([r.pivot] if wide else []),
                       started if wide else started[5:],
                       f"{r.seconds:.1f}" if r.seconds is not None else "-")
    return result


def catalog_table(statuses: list[Availability], width: int = 80) -> Table:
    """The catalog, one row per tokenizer: what it is and where it resolves from here (or the
    command that would make it available). The family and models columns only when the
    terminal is wide enough."""
    wide, roomy = width >= 120, width >= 100
    result = new_table("name", *(["family"] if roomy else []), "tokens", "library", "framing",
                   *(["models"] if wide else []), "on this machine", pad_edge=False)
    for status in statuses:
        item = status.entry
        here = status.origin if status.available else f"missing: {status.command}"
        result.add_row(plain(item.name), *([plain(item.family)] if roomy else []),
                       f"{item.vocab_size:,}", item.library, framing_cell(item.framing),
                       *([plain(item.models)] if wide else []), plain(here))
    return result


FRAMING_KEY = ("framing: the tokens a one-message request adds (its chat format); doc: from "
               "the maker's documented format, else measured with the model's own chat "
               "template; ?: not known")


def framing_cell(framing) -> str:
    """A catalog entry's framing in a table cell: its tokens, and `doc` when documented (not
    measured). FRAMING_KEY says so under the table.

    >>> from analyzer.external.catalog import Framing
    >>> framing_cell(Framing(tokens=8, basis="measured", how="...")), framing_cell(None)
    ('+8', '?')
    """
    if framing is None:
        return "?"
    return f"+{framing.tokens}" + (" doc" if framing.basis is FramingBasis.DOCUMENTED else "")
