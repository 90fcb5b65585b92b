"""The documents a run is shown as: the JSON of `show --json` and `export`, and the CSV.

The command line prints them and the service answers with them; neither builds a document of
its own. Every NaN becomes null, every number a plain int or float.

    show_document(data, frame)          # {"run", "corpus", ..., "records": [...], ...}
    export_json(db, run_id)             # the export as JSON text, piece by piece (streamed)
    export_document(db, run_id)         # the same document, parsed
    export_csv(data, frame)             # the records, one row each (CSV_KEYS)
    unit_counts_csv(data)               # each measured unit's count, one row each (streamed)

The export is written as it is made: each vocabulary's merges, and each unit's count, are read
and written one vocabulary at a time, so a run of hundreds of languages and vocabularies never
holds its whole document (hundreds of megabytes of JSON) in memory.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analyzer.bpe import Training, Vocabulary
from analyzer.bpe.pretokenize import NONE
from analyzer.corpus import language_name
from analyzer.errors import Invalid, NotFound, setting
from analyzer.external.library_trained import whole_tokenizer
from analyzer.files import without_local_paths, write_atomically
from analyzer.identity import BASE_PRETOKENIZER, SHARED_SCOPE, VocabKind, VocabularyId
from analyzer.metrics import (
    SECTIONS,
    SUMMARY_COLUMNS,
    VERDICT_COLUMNS,
    RunData,
    RunResults,
    estimators,
    load_run_data,
    tokenizer_models,
)
from analyzer.metrics.algorithms import ALGORITHM_COLUMNS
from analyzer.metrics.bill import BILL_COLUMNS, Workload
from analyzer.metrics.costs import COLUMNS as COST_COLUMNS
from analyzer.metrics.vocabularies import OVERLAP_COLUMNS, SCRIPT_COLUMNS
from analyzer.queries import complete_run, extended_tokenizer
from analyzer.store import (
    AnalyzerDatabase,
    CorpusDetail,
    ReplacementTexts,
    RunRead,
    StoredMerge,
    VocabularyRead,
    get_corpus_by_id,
    get_run,
    iter_merges,
    load_model,
    load_replacements,
    load_texts,
    load_unit_ids,
    model_digests,
    vocabularies,
)

RECORD_KEYS = ["vocab", "kind", "pretokenizer", "size", "lang", "tokens", "bytes", "chars", "premium",
               "overhead", "byte_premium", "bytes_per_token", "chars_per_token", "fertility",
               "char_fertility", "word_split_pct",
               "unit_premium_median", "unit_premium_q1", "unit_premium_q3", "premium_ci_low",
               "premium_ci_high", "unit_premium", "unit_premium_ci_low", "unit_premium_ci_high",
               "gini", "chunks", "chunk_premium", "utilisation", "mean_rank",
               "renyi_efficiency"]
"""The fields of a record, in order: one record per (vocabulary, pre-tokenizer, size,
language). `premium` is the ratio of totals (the language's tokens summed over the measured
units, over the pivot's: Petrov et al.'s, the default in every face), `unit_premium` the mean
of unit ratios (each unit's tokens over the pivot's, averaged: tokentax's; units where the
pivot has no tokens left out; null for joined counts), each with its 95 % bootstrap interval
(`premium_ci_low`/`_high`, `unit_premium_ci_low`/`_high`) over the same resamples of the units.
`kind` is the vocabulary's (a VocabKind: shared, production, imported, ...);
`pretokenizer` is null for production tokenizers and imported counts; `size` is 0 for
imported counts (their tokenizer's size is not known); `chunks` and `chunk_premium` (the
language's chunks over the pivot's) only where a pre-tokenizer split the text; the allocation
metrics (`utilisation`, `mean_rank`, `renyi_efficiency`; see analyzer.metrics.allocation) only
for trained vocabularies. `fertility` is tokens per word where words are written apart,
`char_fertility` tokens per character where they are not (Chinese, Japanese, Thai, ...);
`word_split_pct` (production tokenizers, languages written with spaces) is the percentage of
words a token boundary falls inside (tokka-bench's continued words)."""

SUMMARY_KEYS = SUMMARY_COLUMNS
"""Per configuration that counts every language (see `analyzer.metrics.summaries`): its fields,
total tokens and cost against the reference, the Gini of the premiums, the total against the
shared vocabulary's, the worst-charged language, and whether it is on the frontier."""

ATTRIBUTION_KEYS = ["vocab", "pretokenizer", "lang", "merges_share", "occurrences_share",
                    "bytes_share", "first_merge", "chosen_share"]


EXTENSION_KEYS = ["vocab", "base", "added", "lang", "tokens", "premium", "base_premium",
                  "trained_on"]
"""Per extended production tokenizer, stored added size (0: the base) and language."""

REACH_KEYS = ["vocab", "lang", "merges", "base_premium", "premium", "tokens_change", "to_within",
              "to_target", "pivot_change", "trained_on"]
"""Per extended production tokenizer and language: the premium with the base and with every
trained addition, and the added tokens that bring it within 10 % of the pivot (`to_within`)
and to the run's target (null: no trained addition does)."""

INTEGER_KEYS = {"size", "tokens", "bytes", "chars", "chunks", "first_merge", "added", "merges",
                "to_within", "to_target", "transition", "shared", "either"}


def records(frame: pd.DataFrame) -> list[dict]:
    """The documented records: one per (vocab, pretokenizer, size, lang); NaN becomes null."""
    return rows(frame, RECORD_KEYS)


def _record_value(key: str, value):
    value = plain_value(value)
    return int(value) if key in INTEGER_KEYS and value is not None else value


def rows(frame: pd.DataFrame, keys: list[str]) -> list[dict]:
    """A frame's rows as JSON objects with these keys; NaN becomes null."""
    if frame.empty:
        return []
    return [{key: _record_value(key, value) for key, value in row.items()}
            for row in frame[keys].to_dict(orient="records")]


DOCUMENTS: dict[str, Callable[[Any], Any]] = {
    "records": records,
    "summaries": lambda frame: rows(frame, SUMMARY_KEYS),
    "verdicts": lambda frame: rows(frame, VERDICT_COLUMNS),
    "model_costs": lambda frame: rows(frame, COST_COLUMNS),
    "equal_cost_sizes": list,
    "attribution": lambda frame: rows(frame, ATTRIBUTION_KEYS),
    "divergence": list,
    "superbpe_effects": list,
    "own_superbpe_effects": list,
    "extension_effects": lambda frame: rows(frame, EXTENSION_KEYS),
    "extension_reach": lambda frame: rows(frame, REACH_KEYS),
    "algorithm_premiums": lambda frame: rows(frame, ALGORITHM_COLUMNS),
    "vocabulary_scripts": lambda frame: rows(frame, SCRIPT_COLUMNS),
    "vocabulary_overlaps": lambda frame: rows(frame, OVERLAP_COLUMNS),
}
"""Each built-in section's JSON (`analyzer.metrics.SECTIONS`): its rows with their documented
keys. A section a plug-in registers is written as `as_written` writes it."""


def as_written(value: Any) -> Any:
    """A section no entry of `DOCUMENTS` names (a plug-in's), as the documents write it: a
    frame's rows with its own columns, in its order (NaN becomes null); a list as it is."""
    return rows(value, list(value.columns)) if isinstance(value, pd.DataFrame) else value


def section_document(results: RunResults, name: str) -> Any:
    """A section of the run as the documents write it."""
    return DOCUMENTS.get(name, as_written)(results[name])


def _results(data: RunData | RunResults, frame: pd.DataFrame | None) -> RunResults:
    return data if isinstance(data, RunResults) else RunResults(data, frame)


def bill_document(results: RunResults, workload: Workload | None) -> dict:
    """`{"bill": ...}`: what `workload` costs a month on each priced model (its workload, the
    answer in words, a row per model, `BILL_COLUMNS`); nothing when no workload was given."""
    if workload is None:
        return {}
    found = results.bill(workload)
    return {"bill": {"workload": found["workload"], "said": found["said"],
                     "rows": rows(found["rows"], BILL_COLUMNS)}}


def show_document(data: RunData | RunResults, frame: pd.DataFrame | None = None,
                  workload: Workload | None = None) -> dict:
    """`analyzer show RUN --json`: the run's identity, and each section `shown` (every record,
    each all-language vocabulary's summary, the equal-cost sizes, each extension's reach, the
    algorithms' premiums); with a `workload`, its bill."""
    results = _results(data, frame)
    run = results.run
    return {"run": run.id, "corpus": run.corpus, "status": str(run.status),
            "pivot": results.data.run_pivot or run.pivot, "reference": run.pivot,
            "languages": run.languages, "sizes": run.sizes, "holdout": run.holdout,
            "seed": run.seed, "estimators": estimators(run),
            # what a run trained on a source took of it (no key for one trained on its corpus)
            **({"training": run.training} if run.training else {}),
            "tokenizers": tokenizers_document(results.data.vocabularies),
            **{section.name: section_document(results, section.name)
               for section in SECTIONS if section.shown},
            **bill_document(results, workload)}


def tokenizers_document(vocabs: list[VocabularyRead]) -> list[dict]:
    """The real tokenizers a run measured, in its order, as `show --json` lists them: `name`
    (the key its records' `vocab` holds), `kind` (production or imported), `size` (null for
    imported counts) and `models`, the models that count with a catalog tokenizer (empty for
    a file of the user's own or imported counts): what a reader knows it by, beside the name
    rather than in it, so that the name stays the key."""
    return [{"name": v.scope, "kind": str(v.kind), "size": None if v.kind.imported else v.size,
             "models": tokenizer_models(v.scope) if v.kind.production else []}
            for v in vocabs if v.kind.measured]


def export_json(db: AnalyzerDatabase, run_id: int, data: RunData | RunResults | None = None,
                frame: pd.DataFrame | None = None, *, units: bool = False,
                full_paths: bool = False, workload: Workload | None = None) -> Iterator[str]:
    """`analyzer export RUN`, as JSON text in pieces: the run's settings, its vocabularies with
    their merges, every section (`analyzer.metrics.SECTIONS`), and the token report; with
    `units`, also each measured unit's count (`units`: one entry per vocabulary, pre-tokenizer,
    size and language, its counts in the order of `measured_units`; `unit_ids`, where the corpus
    has them, are those units' ids in their source). One item of a list per line. Files (a
    tokenizer's, imported counts', a source's in the training notes) are named without this
    machine's folders, as a document to publish names them, unless `full_paths`."""
    where = (lambda text: text) if full_paths else _published
    results = _results(data or load_run_data(db, run_id), frame)
    data = results.data
    run = data.run
    head = _with_paths(run.model_dump(mode="json"), where)
    head["pivot"] = data.run_pivot or run.pivot
    head["reference"] = run.pivot  # what every premium below is measured against
    head["engine_version"] = run.engine_version
    head["estimators"] = estimators(run)
    head["measured_units"] = run.measured_units
    ids = load_unit_ids(db, get_corpus_by_id(db, run.corpus_id))
    if any(ids):  # FLORES's devtest:17, a TMX tuid, a table's id column: as the source gave them
        head["unit_ids"] = [ids[unit] for unit in run.measured_units]
    yield "{\n" + "".join(f"  {_compact(key)}: {_compact(value)},\n" for key, value in head.items())
    yield '  "vocabularies": ['
    models = model_digests(db, run.id)
    for index, vocabulary in enumerate(data.vocabularies):
        entry = _with_paths(vocabulary.model_dump(mode="json"), where)
        if not vocabulary.kind.has_merges and vocabulary.kind.trained:
            entry["models"] = models.get((vocabulary.scope, vocabulary.pretokenizer or NONE), [])
        merges = iter_merges(db, run.id, vocabulary.scope, vocabulary.pretokenizer)
        listed = ",".join(f"\n      {merge_json(merge)}" for merge in merges)
        yield f"{',' if index else ''}\n    {_compact(entry)[:-1]}, \"merges\": [{listed}]}}"
    yield "\n  ],\n"
    for section in SECTIONS:
        yield f"  {_compact(section.name)}: {_listed(section_document(results, section.name))},\n"
    for key, value in bill_document(results, workload).items():
        yield f"  {_compact(key)}: {_compact(value)},\n"
    if units:
        yield '  "units": ['
        for index, entry in enumerate(unit_counts(data)):
            yield f"{',' if index else ''}\n    {_compact(entry)}"
        yield "\n  ],\n"
    report = token_report(run, results.frame, data.vocabularies)
    for tokenizer in report["tokenizers"].values():
        tokenizer["source"] = where(tokenizer["source"])
    yield f'  "token_report": {_compact(report)}\n}}\n'


def _published(text: str | None) -> str | None:
    return None if text is None else without_local_paths(text)


PATH_KEYS = ("source", "error", "notes")
"""The fields of an exported run and its vocabularies that may name files on this machine."""


def _with_paths(document: dict, where: Callable[[str | None], str | None]) -> dict:
    """`document` with `where` applied to each text of `PATH_KEYS`, at any depth (a run's
    training notes are inside its `training`)."""
    def shown(key, value):
        if isinstance(value, dict):
            return {inner: shown(inner, item) for inner, item in value.items()}
        if isinstance(value, list):
            return [shown(key, item) for item in value]
        return where(value) if key in PATH_KEYS and isinstance(value, str) else value
    return {key: shown(key, value) for key, value in document.items()}


def export_document(db: AnalyzerDatabase, run_id: int, data: RunData | RunResults | None = None,
                    frame: pd.DataFrame | None = None, *, units: bool = False,
                    full_paths: bool = False) -> dict:
    """The export (`export_json`) as one dict, for a caller that wants it whole."""
    return json.loads("".join(export_json(db, run_id, data, frame, units=units,
                                          full_paths=full_paths)))


def unit_counts(data: RunData) -> Iterator[dict]:
    """Each vocabulary's count of each measured unit, per pre-tokenizer, size and language:
    `{"vocab", "pretokenizer", "size", "lang", "tokens": [one per measured unit]}`."""
    for (vocab, pretokenizer, size), by_lang in data.counts.items():
        for lang in data.run.languages:
            if lang in by_lang:
                yield {"vocab": vocab, "pretokenizer": pretokenizer, "size": size, "lang": lang,
                       "tokens": by_lang[lang].tolist()}


UNIT_KEYS = ["vocab", "pretokenizer", "size", "lang", "unit", "tokens"]
"""The columns of `export --format csv --units`: one row per count of one measured unit (`unit`:
its index in the corpus, as in the JSON's `measured_units`)."""


def unit_counts_csv(data: RunData) -> Iterator[str]:
    """Every measured unit's count as CSV lines (UNIT_KEYS), a vocabulary at a time: the long
    form pandas and DuckDB read directly."""
    yield ",".join(UNIT_KEYS) + "\n"
    units = [f",{unit}," for unit in data.run.measured_units]  # millions of rows: joined in C
    for entry in unit_counts(data):
        if not units:
            continue
        prefix = _csv_fields([entry["vocab"], entry["pretokenizer"] or "", entry["size"],
                              entry["lang"]])
        rows = map(operator.add, units, map(str, entry["tokens"]))
        yield prefix + ("\n" + prefix).join(rows) + "\n"


TEXT_KEYS = ["unit", "lang", "text"]
"""The columns of `analyzer corpus NAME --texts`: every stored text, `unit` its index in the
corpus as `--units` and `run --counts` number it."""


def corpus_texts_csv(db: AnalyzerDatabase, corpus: CorpusDetail) -> Iterator[str]:
    """A corpus's texts as CSV lines (TEXT_KEYS), unit by unit: what to send to a provider's
    count-tokens endpoint, whose counts `analyzer run --counts` imports by the same index."""
    yield ",".join(TEXT_KEYS) + "\n"
    texts = load_texts(db, corpus.id, corpus.languages)
    for unit in range(corpus.units):
        yield "".join(_csv_fields([unit, lang, texts[lang][unit]]) + "\n"
                      for lang in corpus.languages)


def _csv_fields(values: list) -> str:
    """Values as one CSV line's fields (quoted where they hold a comma, quote or line break)."""
    fields = []
    for value in map(str, values):
        if any(mark in value for mark in ',"\n\r'):
            value = '"' + value.replace('"', '""') + '"'
        fields.append(value)
    return ",".join(fields)


def _compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _listed(value) -> str:
    """A section's JSON: a list one item per line (an object or a matrix row each)."""
    if not isinstance(value, list) or not value:
        return _compact(value)
    return "[\n" + ",\n".join(f"    {_compact(item)}" for item in value) + "\n  ]"


CSV_KEYS = [*RECORD_KEYS[:RECORD_KEYS.index("lang") + 1], "language",
            *RECORD_KEYS[RECORD_KEYS.index("lang") + 1:], "models", "reference", "estimators",
            "run"]
"""The columns of `export --format csv` and `show --format csv`: the records' fields in their
order, and what a CSV read on its own needs beside them: `language`, the name of `lang`'s
code; `models`, the models that count with a catalog tokenizer (`; ` between them; empty for
anything else); `reference`, the language every premium is over; `estimators`, which
estimator each premium field is (`premium: ratio of totals; unit_premium: mean of unit
ratios`); `run`, the run's id. They are
columns, not a leading comment, which a CSV reader takes for a row. Numbers are plain, at full
precision; `word_split_pct` is a percentage, every other ratio a plain ratio."""


def export_csv(data: RunData | RunResults, frame: pd.DataFrame | None = None) -> str:
    """The records as CSV (`CSV_KEYS`): the JSON records' fields, in their order, with the
    language's name, the tokenizer's models, the reference and the run beside them."""
    results = _results(data, frame)
    frame, run = results.frame, results.run
    if frame.empty:
        return ",".join(CSV_KEYS) + "\n"
    table = frame[RECORD_KEYS].copy()
    table.insert(RECORD_KEYS.index("lang") + 1, "language", table["lang"].map(language_name))
    names = {vocab: "; ".join(tokenizer_models(vocab)) if VocabKind(kind).production else ""
             for vocab, kind in set(zip(table["vocab"], table["kind"], strict=True))}
    table["models"] = [names[vocab] for vocab in table["vocab"]]
    table["reference"] = run.pivot
    table["estimators"] = "; ".join(f"{field}: {name}" for field, name in estimators(run).items()
                                    if name)
    table["run"] = run.id
    return table[CSV_KEYS].to_csv(index=False)


def merge_json(merge: tuple[int, int, int, int, bytes]) -> str:
    """One merge (a `StoredMerge`, or its fields) as a JSON object: ids, the count when
    chosen, and the token's bytes in hex. Written as text: an export has millions.

    >>> merge_json((97, 98, 256, 5, b"ab"))
    '{"left": 97, "right": 98, "id": 256, "count": 5, "token_hex": "6162"}'
    """
    left, right, new_id, count, token = merge
    return (f'{{"left": {left}, "right": {right}, "id": {new_id}, "count": {count}, '
            f'"token_hex": "{token.hex()}"}}')


def merges_document(merges: list[StoredMerge]) -> list[dict]:
    """Merges as JSON objects (see `merge_json`)."""
    return [json.loads(merge_json(merge)) for merge in merges]


def training_document(training: Training) -> dict:
    """`analyzer train --json`: the merge list with each token's text (bytes that are not
    UTF-8 shown as \\x escapes)."""
    vocabulary = Vocabulary(training.merges)
    merges = [{"rank": rank, "left": left, "right": right, "id": new_id,
               "count": training.counts[rank],
               "token": vocabulary.token_bytes(new_id).decode("utf-8", errors="backslashreplace")}
              for rank, ((left, right), new_id) in enumerate(training.merges)]
    return {"vocab_size": vocabulary.size, "stop_reason": training.stop_reason, "merges": merges}


def token_report(run: RunRead, frame: pd.DataFrame, vocabs: list[VocabularyRead]) -> dict:
    """The export's `token_report` section (docs/reference/export.md lists its fields): per language its
    chars and bytes, tokens under shared and under its own vocabulary, bytes per token and
    the curve over sizes; each production tokenizer's tokens and premium per language; rules
    learned per vocabulary; and whether every measured text round-tripped. Trained numbers are
    those of the run's first pre-tokenizer."""
    first = run.pretokenizers[0]
    # each language's first row, and each (vocab, size, lang)'s cells, in dicts: a frame's
    # filter or .loc per language and cell took seconds at 200 languages
    firsts = frame.drop_duplicates("lang")
    sizes = {lang: (int(chars), int(n_bytes)) for lang, chars, n_bytes in zip(
        firsts["lang"].tolist(), firsts["chars"].tolist(), firsts["bytes"].tolist())}
    frame = frame[(frame["pretokenizer"] == first) | frame["pretokenizer"].isna()]
    vocabs = [v for v in vocabs if v.pretokenizer in (first, None)]
    cells = {(row["vocab"], row["size"], row["lang"]): row for row in frame[
        ["vocab", "size", "lang", "tokens", "bytes_per_token", "premium"]].to_dict("records")}
    largest = max(run.sizes) if run.sizes else None
    languages = {}
    for lang in run.languages:
        chars, n_bytes = sizes[lang]
        entry = {"name": language_name(lang), "chars": chars, "bytes": n_bytes}
        if largest is not None:
            shared = cells[(SHARED_SCOPE, largest, lang)]
            own = cells.get((VocabularyId.own(lang).scope, largest, lang))
            entry.update(
                tokens_shared=int(shared["tokens"]),
                tokens_own=None if own is None else int(own["tokens"]),
                bytes_per_token_shared=float(shared["bytes_per_token"]),
                bytes_per_token_own=None if own is None else float(own["bytes_per_token"]),
                curve=[[size, int(cells[(SHARED_SCOPE, size, lang)]["tokens"])]
                       for size in run.sizes],
            )
        languages[lang] = entry
    tokenizers = {}
    for v in vocabs:
        if v.kind.measured:
            tokenizers[v.scope] = {
                "kind": str(v.kind), "size": None if v.kind.imported else v.size,
                "models": tokenizer_models(v.scope) if v.kind.production else [],
                "library": v.library, "source": v.source,
                "languages": {lang: {"tokens": int(cells[(v.scope, v.size, lang)]["tokens"]),
                                     "premium": plain_value(cells[(v.scope, v.size, lang)][
                                         "premium"])}
                              for lang in run.languages}}
    return {
        "pivot": run.pivot,
        "size": largest,
        "languages": languages,
        "tokenizers": tokenizers,
        "rules_learned": {v.scope: v.merges_learned for v in vocabs if v.kind.has_merges},
        "roundtrip_ok": all(v.roundtrip_ok for v in vocabs if v.roundtrip_ok is not None),
    }


def plain_value(value):
    """A frame cell as JSON wants it: NaN as None, numpy scalars as Python numbers."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


@dataclass(frozen=True)
class WrittenTokenizer:
    """An extended production tokenizer written in its base's own format, and checked."""

    files: list[Path]
    name: str
    """`BASE+N`: the files' name, N the tokens added."""
    size: int
    """Every id of the written tokenizer (the base's and the added ones)."""
    checked_units: int
    """Measured units the written files were counted on (every language's), by the base's
    library: each gave exactly the run's count."""


class ExportMismatch(Invalid):
    """The written tokenizer, loaded by its library, does not count as the run did."""


def _library_vocabulary(db: AnalyzerDatabase, run_id: int, scope: str,
                        pretokenizer: str | None) -> VocabularyRead | None:
    """The run's Unigram or WordPiece vocabulary of that name (None: it is no such one)."""
    run = complete_run(db, run_id)
    pretokenizer = pretokenizer or run.pretokenizers[0]
    return next((v for v in vocabularies(db, run_id) if v.scope == scope and
                 v.pretokenizer == pretokenizer and not v.kind.has_merges and v.kind.trained),
                None)


def _export_model(db: AnalyzerDatabase, run_id: int, stored: VocabularyRead, size: int | None,
                  directory: Path) -> WrittenTokenizer:
    """Write a stored Unigram or WordPiece model as it is, then check that its library,
    loading the file (its pre-tokenizer and byte-level steps included), counts every measured
    unit as the run did."""
    assert stored.pretokenizer is not None
    model = load_model(db, run_id, stored.scope, stored.pretokenizer, size)
    split = "" if stored.pretokenizer == NONE else "-" + (
        stored.pretokenizer if stored.pretokenizer.isalnum() else "pattern")
    name = f"{stored.scope.replace(':', '-')}{split}-{model.size}"
    path = directory / f"{name}.tokenizer.json"
    directory.mkdir(parents=True, exist_ok=True)
    write_atomically(path, model.document)
    try:
        tokenizer = whole_tokenizer(path.read_bytes())
        run = get_run(db, run_id)
        texts = load_texts(db, run.corpus_id, run.languages)
        counts = load_run_data(db, run_id, fairness=False).counts[
            (stored.scope, stored.pretokenizer, model.size)]
        checked = 0
        for lang, expected in counts.items():
            found = [len(encoding.ids) for encoding in tokenizer.encode_batch(
                [texts[lang][u] for u in run.measured_units], add_special_tokens=False)]
            for position, (mine, theirs) in enumerate(zip(expected.tolist(), found)):
                if mine != theirs:
                    unit = run.measured_units[position] + 1
                    raise ExportMismatch(
                        f"{path.name}: Hugging Face tokenizers, loading the file, counts {theirs} "
                        f"tokens in {lang} unit {unit}, the run {mine} (its Split pattern cuts "
                        "that text otherwise than the run's pre-tokenizer did); nothing was kept",
                        language=lang, unit=unit)
            checked += len(found)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return WrittenTokenizer([path], name, model.entries, checked)


def export_tokenizer(db: AnalyzerDatabase, run_id: int, scope: str, size: int | None,
                     directory: Path, pretokenizer: str | None = None) -> WrittenTokenizer:
    """Write an extension of a run at `size` (default: every added token) into `directory` in
    its base's format, then load what was written with the base's own library and count every
    measured unit of every language with it: each count must be the run's (per unit at a stored
    size; per language, from the per-merge replacements, at any other), else the files are
    removed and ExportMismatch names the first language and unit that differ. A Unigram or
    WordPiece vocabulary (under `pretokenizer`, default the run's first) is written as the
    tokenizer.json the run stored, checked the same way."""
    library_trained = _library_vocabulary(db, run_id, scope, pretokenizer)
    if library_trained is not None:
        return _export_model(db, run_id, library_trained, size, directory)
    made = vocabularies(db, run_id)
    if not any(v.scope == scope and v.kind.extends for v in made):
        writable = dict.fromkeys(v.scope for v in made if v.kind.extends
                                 or (v.kind.trained and not v.kind.has_merges))
        raise NotFound(f"run {run_id} has no vocabulary {scope!r} to write as files "
                       f"({setting('tokenizer')} takes an extension, extend:NAME, or a Unigram or "
                       f"WordPiece vocabulary); it has: {', '.join(writable) or 'none'}",
                       setting="tokenizer", value=scope)
    extended = extended_tokenizer(db, run_id, scope, size)
    data = load_run_data(db, run_id, fairness=False)  # the counts; the replacements below
    run = data.run
    first = extended.base.size
    n_added = extended.size - first
    files = extended.write(directory)
    try:
        count = extended.base.load_written(directory, extended.written_name())
        texts = load_texts(db, run.corpus_id, run.languages)
        base_counts = data.counts[(scope, BASE_PRETOKENIZER, first)]
        stored = data.counts.get((scope, BASE_PRETOKENIZER, extended.size))
        replaced = load_replacements(db, run_id, ReplacementTexts.MEASURED)[
            (scope, BASE_PRETOKENIZER)]
        for lang in run.languages:
            found = count([texts[lang][u] for u in run.measured_units])
            if stored is not None:
                for position, (mine, theirs) in enumerate(zip(stored[lang].tolist(), found)):
                    if mine != theirs:
                        unit = run.measured_units[position] + 1
                        raise ExportMismatch(f"{extended.written_name()}: {extended.base.library} "
                                             f"counts {theirs} tokens in {lang} unit {unit}, the "
                                             f"run {mine}; nothing was kept", language=lang,
                                             unit=unit)
            expected = int(base_counts[lang].sum()) - sum(replaced[lang][:n_added])
            if sum(found) != expected:
                raise ExportMismatch(f"{extended.written_name()}: {extended.base.library} counts "
                                     f"{sum(found)} tokens in {lang}, the run {expected}; nothing "
                                     "was kept", language=lang)
    except BaseException:
        for path in files:
            path.unlink(missing_ok=True)
        raise
    return WrittenTokenizer(files, extended.written_name(), extended.size,
                            len(run.measured_units) * len(run.languages))
