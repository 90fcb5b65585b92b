"""How the command line shows things: rich tables, notes and progress. Formatting only: the
numbers come from `analyzer.metrics`, the documents from `analyzer.export`."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.progress import Progress, TaskID
from rich.table import Table
from rich.text import Text

from analyzer.bpe.pretokenize import NONE
from analyzer.corpus import language_name
from analyzer.external import Availability
from analyzer.external.catalog import FramingBasis
from analyzer.identity import PARITY_SCOPE, SHARED_SCOPE, Algorithm, VocabKind
from analyzer.metrics import (
    RunResults,
    for_pretokenizer,
    own_vocabulary,
    tokenizer_label,
    tokenizer_sizes,
)
from analyzer.store import CorpusDetail, RunRead, SourceDetail, VocabularyRead

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


def table(*headers: str, **options) -> Table:
    """A `WholeTable` in the command line's style: no identifier or word is cut across lines,
    and no value is cut short with an ellipsis."""
    result = WholeTable(*headers, box=box.SIMPLE_HEAD, **options)
    for column in result.columns:
        column.overflow = "fold"  # a last resort, never needed: every column fits its words
    return result


def languages_table(corpus: CorpusDetail) -> Table:
    result = table("language", "name", "units", "bytes", "characters", "bytes/char")
    for stats in corpus.language_stats:
        result.add_row(stats.lang, plain(stats.name), f"{stats.units:,}", f"{stats.bytes:,}",
                       f"{stats.chars:,}", f"{stats.bytes_per_char:.2f}")
    return result


def source_languages_table(source: SourceDetail) -> Table:
    found = table("language", "name", "files", "bytes", "documents")
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
        part = table("language", "bytes", *map(plain, headers), title=plain(
            title if number == 0 else f"{title} (continued, {number + 1} of {len(chunks)})"))
        last = number == len(chunks) - 1
        for header, _ in extra if last else []:
            part.add_column(header, overflow="fold")
        for lang in order:
            row = [f"{lang} {plain(language_name(lang))}", f"{int(cells.loc[(*key, lang), 'bytes']):,}"]
            for scope, size in chunk:
                if (scope, size, lang) in cells.index:
                    cell = cells.loc[(scope, size, lang)]
                    row.append(f"{int(cell['tokens']):,} ({_percent(cell['overhead'])})")
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
        part = table(*headers, title=plain(f"{vocab}: premium vs {pivot} by tokens added "
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


def with_interval(value: float, low: float, high: float, spec: str) -> str:
    """A value with its interval in brackets; the value alone where there is none (a run
    that counted joined texts draws no interval).

    >>> with_interval(0.5, 0.4, 0.6, ".2f"), with_interval(0.5, math.nan, math.nan, ".2f")
    ('0.50 [0.40, 0.60]', '0.50')
    """
    if math.isnan(low) or math.isnan(high):
        return format(value, spec)
    return f"{value:{spec}} [{low:{spec}}, {high:{spec}}]"


def frontier_table(configurations: pd.DataFrame) -> Table:
    """Every configuration, those on the frontier first, each by cost: its cost against the
    reference and its Gini (95 % intervals), and the language it charges most."""
    from analyzer.metrics import configuration_name

    result = table("configuration", "cost", "Gini", "charges most", "frontier",
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
        result = table("language", "script", *[f"{algorithm} {size:,}" for size, algorithm in columns],
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
            result = table("script", "languages",
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
    result = table("language", "merges", "occurrences", "training bytes", "first merge",
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


def summary_notes(summaries: pd.DataFrame, pretokenizer: str) -> list[str]:
    """What the parity-aware vocabulary changes, in a sentence per size: the Gini of premiums
    beside the shared one's, and the total tokens against the shared vocabulary's."""
    rows = summaries[summaries["pretokenizer"] == pretokenizer]
    shared = rows[rows["kind"] == VocabKind.SHARED].set_index("size")
    notes = []
    for _, row in rows[rows["kind"] == VocabKind.PARITY].iterrows():
        base = shared.loc[row["size"]]
        notes.append(
            f"parity-aware at size {row['size']}: Gini of premiums "
            f"{with_interval(row['gini'], row['gini_ci_low'], row['gini_ci_high'], '.3f')} vs "
            f"shared {with_interval(base['gini'], base['gini_ci_low'], base['gini_ci_high'], '.3f')}"
            "; total tokens "
            f"{with_interval(row['vs_shared'], row['vs_shared_ci_low'], row['vs_shared_ci_high'], '+.1%')}"
            " vs shared (95 % bootstrap intervals)")
        if row["gini"] < row["gini_ci_low"]:
            # Not a bug: parity-aware training equalised these very units (its dev units), so
            # any resample of them is less even than the set it was fitted to.
            notes.append(f"at size {row['size']} the parity-aware Gini lies below its interval: "
                         "the vocabulary was fitted to even out these very units, and resamples "
                         "of them are less even (an in-sample figure)")
    return notes


def training_notes(training: dict | None) -> list[str]:
    """What a run that trained on a source says of its sample (nothing for one that trained on
    its corpus)."""
    if not training:
        return []
    languages = training["languages"]
    lines = [f"Trained on source {training['source']} (mix {training['mix']}, seed "
             f"{training['seed']}, fingerprint {training['fingerprint'][:12]}): "
             f"{_size(sum(item['bytes'] for item in languages))}, "
             f"{sum(item['documents'] for item in languages):,} documents in {len(languages)} "
             "languages; measured on the corpus."]
    short = [f"{item['lang']} ({_size(item['available_bytes'])} of {_size(item['budget'])})"
             for item in languages if item["short"]]
    if short:
        lines.append(f"Gave all they have, less than asked: {', '.join(short)}.")
    skipped = [f"{item['lang']} ({item['skipped_documents']:,} documents)" for item in languages
               if item["skipped_documents"] or item["notes"]]
    if skipped:
        lines.append(f"Skipped what could not be read (--skip-invalid): {', '.join(skipped)}.")
    lines += [note[0].upper() + note[1:] + "." for item in languages
              for note in item.get("cache_notes", [])]
    return lines


SHORT_LISTED = 6
"""Unigram and WordPiece vocabularies short of their size named in the note, at most."""


def early_stops(vocabularies: list[VocabularyRead], sizes: list[int]) -> list[str]:
    """Say which vocabularies stopped before the largest size, so nobody reads a flat curve
    as a finding: one sentence for the shared one, one for all per-language ones."""
    stopped = []
    for v in vocabularies:
        if not v.kind.has_merges:
            continue
        final = (v.base_size or 256) + (v.merges_learned or 0)
        if v.stop_reason == "min_pair_count" and final < v.size:
            stopped.append((v, final))
    notes = [f"the {_name(v)} vocabulary stopped at size {final}: no pair occurs often enough; "
             f"its larger sizes equal size {final}" for v, final in stopped
             if not v.kind.trained_on_one_language and v.kind != VocabKind.EXTENSION]
    notes += [f"{v.scope} stopped at +{v.merges_learned}: no pair of its ids occurs often enough "
              f"in the training texts; its larger additions equal +{v.merges_learned}"
              for v, _ in stopped if v.kind == VocabKind.EXTENSION]
    own = [f"{_name(v)} at {final}" for v, final in stopped if v.kind.trained_on_one_language]
    if own:
        notes.append(f"{len(own)} per-language vocabularies stopped before size {max(sizes)} "
                     f"(no pair occurs often enough; larger sizes equal the final one): "
                     + ", ".join(own))
    short = [f"{_name(v)} ({v.stop_reason})" for v in vocabularies
             if v.kind.algorithm not in (None, Algorithm.BPE) and v.stop_reason]
    if short:
        shown = ", ".join(short[:SHORT_LISTED]) + (
            f" and {len(short) - SHORT_LISTED} more (export lists every model's entries)"
            if len(short) > SHORT_LISTED else "")
        notes.append(f"{len(short)} Unigram or WordPiece vocabularies have fewer entries than "
                     "their size at some size, the library finding no more pieces in their "
                     f"training text: {shown}")
    return notes


def _name(vocabulary: VocabularyRead) -> str:
    """A vocabulary's name for a sentence: its scope, with its pre-tokenizer if it has one."""
    if vocabulary.pretokenizer in (None, NONE):
        return vocabulary.scope
    return f"{vocabulary.scope} ({vocabulary.pretokenizer})"


def _percent(overhead: float) -> str:
    return "n/a" if overhead is None or math.isnan(overhead) else f"{overhead:+.0%}"


def runs_table(summaries: list[RunRead], width: int = 80) -> Table:
    """The runs, one row each, whole in a terminal `width` columns wide: below 100 columns the
    pivot is left out and the start is shown without its year; long names wrap instead of being
    cut; sizes are shown as a range; errors are left to lines below the table."""
    wide = width >= 100
    headers = ["id", "corpus", "status", "langs", "sizes", *(["pivot"] if wide else []),
               "started (UTC)", "seconds"]
    result = table(*headers, pad_edge=False)
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
    result = table("name", *(["family"] if roomy else []), "tokens", "library", "framing",
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


@dataclass(frozen=True)
class ShowOptions:
    """What `analyzer show` was asked to show: one vocabulary, and maybe one size and one
    pre-tokenizer, at a terminal's width."""

    vocab: str
    size: int | None
    pretokenizer: str | None
    width: int


Printed = list[list]
"""What a view prints: groups of renderables, each group printed in one call."""


def records_view(results: RunResults, options: ShowOptions) -> Printed:
    """The tokens and overhead tables, one per pre-tokenizer (an extension's: one), each with
    the parity notes of the run's parity-aware vocabulary under it."""
    run, data = results.run, results.data
    extended = any(v.scope == options.vocab and v.kind == VocabKind.EXTENSION
                   for v in data.vocabularies)
    shown = [] if extended else [options.pretokenizer] if options.pretokenizer else run.pretokenizers
    parity = results["summaries"] if run.parity and options.vocab == SHARED_SCOPE else None
    found: Printed = []
    for index, split in enumerate(shown):
        found.append(summary_tables(run, results.frame, data.vocabularies, options.vocab,
                                    [options.size] if options.size else None, split,
                                    tokenizers=index == 0, width=options.width))
        found += [[f"[cyan]Parity:[/cyan] {plain(note)}"]
                  for note in (summary_notes(parity, split) if parity is not None else [])]
    return found


def frontier_view(results: RunResults, options: ShowOptions) -> Printed:
    """Cost against fairness, for the shared view of every size and pre-tokenizer."""
    if options.vocab != SHARED_SCOPE or options.pretokenizer is not None or options.size:
        return []
    configurations = results["summaries"]
    return [[frontier_table(configurations)]] if len(configurations) > 1 else []


def algorithms_view(results: RunResults, options: ShowOptions) -> Printed:
    """Each language under each algorithm, for the shared view of every size."""
    if options.vocab != SHARED_SCOPE or options.size is not None:
        return []
    premiums = results["algorithm_premiums"]
    if options.pretokenizer is not None:
        premiums = premiums[premiums["pretokenizer"] == options.pretokenizer]
    return [algorithm_tables(premiums, results.run.pivot)]


def extension_view(results: RunResults, options: ShowOptions) -> Printed:
    """What each added size does to each language, and the tokens that reach the pivot: for
    the shared view, or one extension's."""
    extended = any(v.scope == options.vocab and v.kind == VocabKind.EXTENSION
                   for v in results.data.vocabularies)
    if not (extended or options.vocab == SHARED_SCOPE):
        return []
    effects, reached = results["extension_effects"], results["extension_reach"]
    if extended:
        effects = effects[effects["vocab"] == options.vocab]
        reached = reached[reached["vocab"] == options.vocab]
    return [extension_tables(effects, reached, results.run.pivot, results.run.target)]


SHOWN_SCRIPTS = 4
"""The scripts a vocabulary's row names (the largest); the rest are in `export`."""


def vocabularies_view(results: RunResults, options: ShowOptions) -> Printed:
    """The production tokenizers' vocabularies: the scripts of their tokens, the words they
    split (the mean over the languages written with spaces), how much they share."""
    scripts = results["vocabulary_scripts"]
    if scripts.empty or options.vocab != SHARED_SCOPE:
        return []
    overlaps = results["vocabulary_overlaps"]
    frame = results.frame
    result = table("tokenizer", "tokens by script", "words split", "shares with (Jaccard)",
                   title="Production vocabularies: their tokens' scripts, the words they split "
                         "(mean over languages written with spaces), their overlap")
    for name, rows in scripts.groupby("tokenizer", sort=False):
        top = ", ".join(f"{row.script} {row.share:.1%}" for row in rows.head(SHOWN_SCRIPTS).itertuples())
        split = frame[(frame["vocab"] == name)]["word_split_pct"].dropna()
        pairs = overlaps[(overlaps["tokenizer"] == name) | (overlaps["other"] == name)]
        shared = ", ".join(f"{row.other if row.tokenizer == name else row.tokenizer} "
                           f"{row.jaccard:.3f}" for row in pairs.itertuples())
        result.add_row(plain(name), top, f"{split.mean():.1f}%" if len(split) else "-",
                       plain(shared) or "-")
    return [[result]]


TERMINAL_VIEWS: list[tuple[str, Callable[[RunResults, ShowOptions], Printed]]] = [
    ("records", records_view),
    ("summaries", frontier_view),
    ("algorithm_premiums", algorithms_view),
    ("extension_reach", extension_view),
    ("vocabulary_scripts", vocabularies_view),
]
"""What `analyzer show` prints, in its order, each under the section (`analyzer.metrics.SECTIONS`)
it shows: printed when the run has that section."""


class VocabularyBars:
    """Progress of a run: one rich bar per vocabulary in a terminal; elsewhere (a log, a
    pipe) one plain line per step, so progress is still visible and can be read by a program:
    `shared: training 120/744`, `shared: counting`, `shared: done`."""

    def __init__(self, bars: Progress, *, plain_lines: bool = False):
        self.bars = bars
        self.plain_lines = plain_lines
        self.tasks: dict[str, TaskID] = {}
        self.last_tenth: dict[str, int] = {}
        self.overall = bars.add_task("vocabularies", total=None)
        self.done = 0
        self.started: dict[str, float] = {}
        """When each source began to be read (for its rate)."""

    def _line(self, text: str) -> None:
        self.bars.console.print(plain(text), soft_wrap=True, highlight=False)

    def stage(self, message: str) -> None:
        self.bars.update(self.overall, description=plain(message))
        if self.plain_lines:
            self._line(message)

    def report(self, scope: str, phase: str, done: int, total: int) -> None:
        if phase == "read":
            self._read(scope, done, total)
            return
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
            if scope in self.started:  # a source read, not a vocabulary
                return
            self.done += 1
            self.bars.update(self.overall, description=f"vocabularies done: {self.done}")

    def _read(self, scope: str, done: int, total: int) -> None:
        """Reading a training source: the bytes read of the total, the rate and the time left."""
        now = time.monotonic()
        started = self.started.setdefault(scope, now)
        rate = done / max(now - started, 1e-9)
        left = (total - done) / rate if rate > 0 and done else None
        said = (f"{scope}: read {_size(done)} of {_size(total)}"
                + (f", {_size(rate)}/s, {_duration(left)} left" if left is not None else ""))
        if self.plain_lines:
            tenth = 10 * done // max(total, 1)
            if self.last_tenth.get(scope) != tenth:
                self.last_tenth[scope] = tenth
                self._line(said)
            return
        task = self.tasks.get(scope)
        if task is None:
            task = self.tasks[scope] = self.bars.add_task(plain(scope), total=total)
        self.bars.update(task, description=plain(said), completed=done, total=total)


def _size(n_bytes: float) -> str:
    """A size in decimal units.

    >>> _size(1_234_567), _size(999)
    ('1.2 MB', '999 B')
    """
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.1f} {unit}"
    return f"{n_bytes:.0f} B"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
