"""How the command line shows things in tables (rich). Formatting only: the numbers come from
`analyzer.metrics`, the documents from `analyzer.export`."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from analyzer.bpe.pretokenize import NONE
from analyzer.corpus import language_name
from analyzer.external.catalog import FramingBasis
from analyzer.identity import PARITY_SCOPE, SHARED_SCOPE, Algorithm

from ..settings import byte_size
from .formats import compact_sizes, fold_words, plain, with_interval

if TYPE_CHECKING:  # the run tables' imports are in them: a table of corpora needs no pandas
    import pandas as pd

    from analyzer.external import Availability
    from analyzer.store import CorpusDetail, RunRead, SourceDetail, VocabularyRead

WHOLE = re.compile(r"\b(file|path|url|source|corpus|tokenizer|name|id|language|token)s?\b")
"""A column whose header says it names things (files, paths, corpora, tokenizers, ...) is
never wrapped: a name or a path cut across lines cannot be copied, nor found by a program."""


def _longest(cell, whole: bool) -> int:
    """The columns that `cell` needs: its longest line when `whole`, else its longest word."""
    text = cell.plain if isinstance(cell, Text) else Text.from_markup(cell, emoji=False).plain \
        if isinstance(cell, str) else ""
    pieces = text.splitlines() if whole else text.split()
    return max(map(cell_len, pieces), default=0)


class WholeTable(Table):
    """A rich table that never breaks a word, a header, or any cell of a column that names
    things (`WHOLE`): each column is at least that wide, even when the table is then wider
    than the terminal (the command line's Console prints it whole, for the terminal to wrap;
    a pipe gets every line whole). Other cells wrap between words. Widths are found when the
    table is printed, so rows and columns can be added in any way. A terminal narrower than
    those widths gets the table at them: rich would shrink columns to nothing and leave them
    out (`runs` at 40 columns lost its ids, `show` at 24 every premium)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for column in self.columns:
            whole = column.no_wrap or bool(WHOLE.search(str(column.header)))
            column.no_wrap = whole
            column.min_width = max(column.min_width or 0, _longest(column.header, True),
                                   *(_longest(cell, whole) for cell in column.cells))
        least = Measurement.get(console, options.update(max_width=MARKDOWN_WIDTH), self).minimum
        width = max(options.max_width, least)
        title = self.title
        if isinstance(title, str | Text) and cell_len(str(title)) > width:
            # a title is prose: folded between words to the width, as the Console folds a line
            # (it would be printed whole, past the table's edge and the terminal's)
            self.title = fold_words(Text.from_markup(title) if isinstance(title, str) else title,
                                    width)
        try:
            yield from super().__rich_console__(console, options.update(max_width=width))
        finally:
            self.title = title


def new_table(*headers: str, **options) -> Table:
    """A `WholeTable` in the command line's style: no identifier or word is cut across lines,
    no value is cut short with an ellipsis, and columns are two spaces apart (80 columns hold
    a language and six premiums)."""
    options = {"collapse_padding": True, "pad_edge": False, "show_edge": False, **options}
    result = WholeTable(*headers, box=box.SIMPLE_HEAD, **options)
    for column in result.columns:
        column.overflow = "fold"  # a last resort, never needed: every column fits its words
    return result


MARKDOWN_SPECIAL = re.compile(r"[\\`*|<>\[\]]")
"""What Markdown would read as markup in a table's cell or title (an underscore inside a
word is not: `eng_Latn` stays as it is)."""
MARKDOWN_WIDTH = 10_000
"""Markdown tables are not read at a terminal's width: every column in one table."""


def markdown_text(item) -> str:
    """A table as a Markdown table (its title in bold above it), or a line of rich markup as
    plain text: what `--format markdown` prints.

    >>> table = new_table("language", "size 300", title="Premiums")
    >>> table.add_row("eng_Latn English", "1.00x")
    >>> print(markdown_text(table))
    **Premiums**
    <BLANKLINE>
    | language | size 300 |
    | --- | --- |
    | eng_Latn English | 1.00x |
    """
    if not isinstance(item, Table):
        return Text.from_markup(str(item), emoji=False).plain

    def cell(value) -> str:  # Markdown's own characters escaped: a name is never markup
        text = value.plain if isinstance(value, Text) else Text.from_markup(str(value),
                                                                            emoji=False).plain
        return MARKDOWN_SPECIAL.sub(r"\\\g<0>", text).replace("\n", " ")

    lines = [f"**{cell(item.title)}**", ""] if item.title else []
    lines.append("| " + " | ".join(cell(column.header) for column in item.columns) + " |")
    lines.append("|" + "|".join(" --- " for _ in item.columns) + "|")
    for row in zip(*(column.cells for column in item.columns)):
        lines.append("| " + " | ".join(cell(value) for value in row) + " |")
    return "\n".join(lines)


def languages_table(corpus: CorpusDetail) -> Table:
    result = new_table("language", "name", "units", "bytes", "characters", "bytes/char")
    for stats in corpus.language_stats:
        result.add_row(stats.lang, plain(stats.name), f"{stats.units:,}", f"{stats.bytes:,}",
                       f"{stats.chars:,}", f"{stats.bytes_per_char:.2f}")
    return result


def training_sample_table(training: dict) -> Table:
    """What a run that trained on a source took of it, language by language: the bytes and
    documents of its sample, of what the language has and was asked for."""
    result = new_table("language", "sample", "documents", "of", "asked", "note",
                       title=plain(f"Training sample from source {training['source']}"))
    for item in training["languages"]:
        note = "all it has" if item["short"] else ""
        if item["skipped_documents"] or item["notes"]:
            note = ", ".join(filter(None, [note, f"{item['skipped_documents']:,} skipped"]))
        result.add_row(plain(language_cell(item["lang"])), byte_size(item["bytes"]),
                       f"{item['documents']:,}", byte_size(item["available_bytes"]),
                       byte_size(item["budget"]), note)
    return result


def source_languages_table(source: SourceDetail) -> Table:
    found = new_table("language", "name", "files", "bytes", "documents")
    for item in source.language_stats:
        found.add_row(item.lang, plain(item.name), f"{item.files:,}", f"{item.bytes:,}",
                      f"{item.documents:,}")
    return found


LANGUAGE_CELL = 22
"""Columns a language's cell takes at most: its code and its name, cut with an ellipsis
(`arb_Arab Standard Ara…`); the code is never cut."""


def language_cell(lang: str, room: int = LANGUAGE_CELL) -> str:
    """A language's code and name in at most `room` columns: the name is cut, never the code.

    >>> language_cell("arb_Arab"), language_cell("eng_Latn")
    ('arb_Arab Standard Ara…', 'eng_Latn English')
    """
    cell = f"{lang} {language_name(lang)}"
    return cell if cell_len(cell) <= room else cell[:room - 1].rstrip() + "…"


def premium_cell(row, intervals: bool) -> str:
    """A premium as every face writes it (`1.62x`), with its 95 % interval on request."""
    from analyzer.metrics import premium_text

    shown = premium_text(row["premium"])
    low, high = row.get("premium_ci_low", math.nan), row.get("premium_ci_high", math.nan)
    if not intervals or low != low or high != high:
        return shown
    return f"{shown} [{low:.2f}, {high:.2f}]"


ColumnOf = tuple[str, Callable[[str], str]]
"""A table's column: its header, and its cell for a row's key."""


def fitted_tables(columns: list[ColumnOf], table: Callable[[list[ColumnOf], int, int], Table],
                  width: int) -> list[Table]:
    """`table(part, number, count)` over `columns`, as many parts as `width` needs: columns
    that do not fit go on to a further table (its rows again), never squeezed or wrapped; each
    part has at least one column."""
    measure = Console(width=10_000, emoji=False)  # the widths the tables take, printed whole
    chunks: list[list[ColumnOf]] = [[]]
    for column in columns:
        tried = table(chunks[-1] + [column], 0, 1)
        if chunks[-1] and measure.measure(tried).maximum > width:
            chunks.append([])
        chunks[-1].append(column)
    return [table(part, number, len(chunks)) for number, part in enumerate(chunks)]


def tokenizer_heading(name: str, size: int | None = None) -> str:
    """A tokenizer's column heading in the terminal, as literal text: its name, and on a line
    under it the short form of its models (`tokenizer_label`), so that the column is no wider
    than the name and as many columns fit.

    >>> print(tokenizer_heading("llama3"))
    llama3
    (Llama 3…)
    >>> print(tokenizer_heading("[b]my.json", 32000))
    \\[b]my.json
    (32,000)
    """
    from analyzer.metrics import tokenizer_label

    shown = tokenizer_label(name, size, short=True)
    rest = shown[len(name):].strip()
    return plain(name) + (f"\n{plain(rest)}" if rest else "")


def summary_tables(run: RunRead, frame: pd.DataFrame, vocabs: list[VocabularyRead],
                   vocab: str = SHARED_SCOPE, sizes: list[int] | None = None,
                   pretokenizer: str = NONE, tokenizers: bool = True,
                   width: int = 80, intervals: bool = False) -> list[Table]:
    """Each language's premium (its tokens over the pivot's for the same text), one line per
    language, under one pre-tokenizer. The default view has a column per size of the shared
    (and parity-aware) vocabulary, one per production tokenizer (with `tokenizers`), and each
    language's premium under its own vocabulary against the pivot's own; `vocab` shows one
    vocabulary's sizes instead. `intervals` adds each premium's 95 % interval. Columns that do
    not fit in `width` go on to a further table, with the languages again, rather than being
    squeezed until no number can be read (every cell's tokens and interval: `--format csv`)."""
    import pandas as pd

    from analyzer.metrics import (
        for_pretokenizer,
        own_vocabulary,
        premium_text,
        tokenizer_sizes,
    )

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
    title = ((f"Run {run.id} on {run.corpus}" if overview else f"Run {run.id}, {vocab} vocabulary")
             + f": tokens vs {language_name(run.pivot)}, same text"
             + ("" if pretokenizer == NONE else f" [{pretokenizer}]"))
    # one vocabulary's sizes: by its largest; the overview, by the shared vocabulary's largest
    # or, with nothing trained, by the first tokenizer (on the first page of a wide table)
    key = (columns[-1] if not overview else (SHARED_SCOPE, largest) if run.sizes
           else columns[0])
    present = [lang for lang in run.languages if (*key, lang) in cells.index]
    order = sorted(present, key=lambda lang: (lang != run.pivot, -cells.loc[(*key, lang), "premium"]))
    def premiums(scope: str, size: int) -> Callable[[str], str]:
        return lambda lang: premium_cell(cells.loc[(scope, size, lang)], intervals) \
            if (scope, size, lang) in cells.index else "-"

    shown: list[ColumnOf] = []
    for scope, size in columns:
        header = tokenizer_heading(scope, size) if scope in names \
            else f"parity {size}" if scope == PARITY_SCOPE else f"size {size}"
        shown.append((header, premiums(scope, size)))
    if not own.empty:  # each language under its own vocabulary, against the pivot's own
        shown.append((f"own {largest}", lambda lang: premium_text(own.loc[lang, "own_premium"])
                       if lang in own.index else "-"))

    def table(part: list[ColumnOf], number: int, count: int) -> Table:
        result = new_table("language", title=plain(
            title if number == 0 else f"{title} ({number + 1} of {count})"))
        for header, _ in part:  # each header literal text already (`tokenizer_heading`)
            result.add_column(header, justify="right")
        room = LANGUAGE_CELL if width < MARKDOWN_WIDTH else 1_000  # a document: names whole
        for lang in order:
            result.add_row(plain(language_cell(lang, room)), *(value(lang) for _, value in part))
        return result

    return fitted_tables(shown, table, width)


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
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return f"not within +{merges:,}"
    return "base" if int(value) == 0 else f"+{int(value):,}"


def frontier_table(configurations: pd.DataFrame, reference: str,
                   intervals: bool = False) -> Table:
    """Every configuration, those on the frontier first, each by cost: its tokens in all
    against `reference`'s (named in the title), its Gini, with their 95 % intervals on request,
    and the language it charges most. An interval goes on a line of its own under its value:
    beside it, the table ran to 84 columns and more."""
    from analyzer.metrics import configuration_name, premium_text

    result = new_table("configuration", "cost", "Gini", "charges most", "frontier",
                       title=plain(f"Cost against fairness: tokens of all languages vs {reference}"
                                   + ("; 95 % intervals" if intervals else "")))
    for column in result.columns[1:3]:  # an interval is never broken across lines
        column.no_wrap = True
    ordered = configurations.dropna(subset=["cost"]).sort_values(["frontier", "cost"],
                                                                 ascending=[False, True])
    for _, row in ordered.iterrows():
        result.add_row(
            plain(configuration_name(row)),
            with_interval(row["cost"] - 1, row["cost_ci_low"] - 1, row["cost_ci_high"] - 1, "+.1%",
                          intervals, between="\n"),
            with_interval(row["gini"], row["gini_ci_low"], row["gini_ci_high"], ".3f", intervals,
                          between="\n"),
            f"{row['worst_lang']} {premium_text(row['worst_premium'])}",
            "yes" if row["frontier"] else "")
    return result


def algorithm_tables(premiums: pd.DataFrame, pivot: str, width: int = 80) -> list[Table]:
    """Per pre-tokenizer: each language's premium (tokens vs the pivot's) under each
    algorithm's vocabulary trained on every language, at every size, and each script's tokens
    against BPE's; columns beyond `width` go on to a further table, as `fitted_tables` says."""
    return [table for pretokenizer, rows in premiums.groupby("pretokenizer", sort=False)
            for table in _split_algorithm_tables(
                rows, pivot, "" if pretokenizer == "none" else f", pre-tokenizer {pretokenizer}",
                width)]


def _split_algorithm_tables(rows: pd.DataFrame, pivot: str, split: str, width: int
                            ) -> list[Table]:
    """`algorithm_tables` for one pre-tokenizer's rows (`split` says which, in the titles)."""
    from analyzer.metrics import by_script

    def titled(title: str) -> Callable[[int, int], str]:
        return lambda number, count: plain(title if number == 0 else
                                           f"{title} ({number + 1} of {count})")

    tables = []
    cells = rows.set_index(["lang", "size", "algorithm"])["premium"]
    order = list(rows[rows["algorithm"] == Algorithm.BPE].sort_values("premium", ascending=False)["lang"]
                 .drop_duplicates())
    scripts = dict(zip(rows["lang"], rows["script"]))

    def premium(size: int, algorithm: str) -> Callable[[str], str]:
        return lambda lang: f"{cells.get((lang, size, algorithm), float('nan')):.2f}x"

    columns = [(f"{algorithm} {size:,}", premium(size, algorithm))
               for size, algorithm in dict.fromkeys(zip(rows["size"], rows["algorithm"]))]
    title = titled(f"Premium vs {pivot} by algorithm{split}")

    def by_language(part: list[ColumnOf], number: int, count: int) -> Table:
        result = new_table("language", "script", *[plain(h) for h, _ in part],
                           title=title(number, count))
        for lang in order:
            result.add_row(plain(lang), plain(scripts[lang]), *(value(lang) for _, value in part))
        return result

    tables += fitted_tables(columns, by_language, width)
    per_script = by_script(rows)
    others = per_script[per_script["algorithm"] != Algorithm.BPE]
    if others.empty:
        return tables
    change = others.set_index(["script", "size", "algorithm"])["vs_bpe"]
    counts = others.groupby("script", sort=True)["languages"].first()

    def against_bpe(size: int, algorithm: str) -> Callable[[str], str]:
        return lambda script: f"{change.get((script, size, algorithm), float('nan')):+.1%}"

    compared = [(f"{algorithm} {size:,} vs bpe", against_bpe(size, algorithm))
                for size, algorithm in dict.fromkeys(zip(others["size"], others["algorithm"]))]
    script_title = titled(f"Tokens against BPE's, per script{split}")

    def by_script_table(part: list[ColumnOf], number: int, count: int) -> Table:
        result = new_table("script", "languages", *[plain(h) for h, _ in part],
                           title=script_title(number, count))
        for script, languages in counts.items():
            result.add_row(plain(script), str(int(languages)), *(value(script) for _, value in part))
        return result

    tables += fitted_tables(compared, by_script_table, width)
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


TOKENIZERS_NAMED = 2
"""A run's production tokenizers `runs` names; more are counted (`15 tokenizers`)."""


def runs_table(summaries: list[RunRead], width: int = 80,
               tokenizers: dict[int, list[str]] | None = None) -> Table:
    """The runs, one row each, whole in a terminal `width` columns wide: below 100 columns the
    pivot is left out and the start is shown without its year; long names wrap instead of being
    cut; sizes are shown as a range, and the production tokenizers each run measured
    (`tokenizers`, by run id) by name, one a line, or by number beyond `TOKENIZERS_NAMED`: a
    run that trained nothing shows what it measured; errors are left to lines below the
    table."""
    wide = width >= 100
    tokenizers = tokenizers or {}
    headers = ["id", "corpus", "status", "langs", "sizes", "tokenizers",
               *(["pivot"] if wide else []), "UTC start", "seconds"]
    result = new_table(*headers, pad_edge=False)
    for column in result.columns:
        column.no_wrap = column.header not in ("corpus", "sizes", "tokenizers")
    for r in summaries:
        started = r.started.replace("T", " ")[:16]
        names = tokenizers.get(r.id, [])
        measured = ("\n".join(map(plain, names)) if len(names) <= TOKENIZERS_NAMED
                    else f"{len(names)} tokenizers") or "-"  # a name a line: each whole
        result.add_row(str(r.id), plain(r.corpus), r.status, str(len(r.languages)),
                       compact_sizes(r.sizes), measured, *([r.pivot] if wide else []),
                       started if wide else started[5:],
                       f"{r.seconds:.1f}" if r.seconds is not None else "-")
    return result


def catalog_table(statuses: list[Availability], width: int = 80) -> Table:
    """The catalog, one row per tokenizer: what it is, the models that count with it (every
    one, and the note on them, when the terminal is wide enough; else the first, under its
    name), and where it resolves from here (or the command that would make it available, whole
    on its line). The family and library columns only when the terminal is wide enough."""
    wide, roomy = width >= 120, width >= 100
    result = new_table("name", *(["family"] if roomy else []), "tokens",
                       *(["library"] if roomy else []), "framing", *(["models"] if wide else []),
                       "on this machine")
    for status in statuses:
        item = status.entry
        here = status.origin if status.available else f"missing: {status.command}"
        name = plain(item.name) if wide else tokenizer_heading(item.name)
        models = ", ".join(item.models) + (f" ({item.models_note})" if item.models_note else "")
        result.add_row(name, *([plain(item.family)] if roomy else []),
                       f"{item.vocab_size:,}", *([item.library] if roomy else []),
                       framing_cell(item.framing),
                       *([plain(models)] if wide else []), plain(here))
    return result


def counted_by_line(statuses: list[Availability]) -> str:
    """Which tokenizers the analyzer's engine counts and which their libraries do, in a line.

    >>> from analyzer.external import availability, entry
    >>> counted_by_line([availability(entry("cl100k_base")), availability(entry("mistral-v3"))])
    "counted by: the analyzer's engine, equal to their libraries; mistral-v3 by sentencepiece"
    """
    by: dict[str, list[str]] = {}
    for status in statuses:
        by.setdefault(status.counted_by, []).append(status.entry.name)
    if "analyzer" not in by:
        return "counted by: their libraries (the analyzer's compiled engine is not built here)"
    del by["analyzer"]
    return "; ".join(["counted by: the analyzer's engine, equal to their libraries",
                      *(f"{', '.join(names)} by {library}" for library, names in by.items())])


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
