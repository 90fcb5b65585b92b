"""Extending a production tokenizer for some languages: merges learned over its own ids, and
every language measured at every number of added tokens.

The base's own pre-tokenizer cuts the training texts (of `extend_langs`, default every run
language) into chunks and its own library encodes each distinct chunk; BPE then continues on
those ids (`bpe.train_by_language` with the base as its `ChunkEncoder`), new ids from the
base's size up. Counting repeats the same steps on the measured units and applies the added
merges to each chunk's ids as the base's library applies them in the written tokenizer
(`analyzer export --tokenizer extend:NAME`): by pair for a tokenizer.json, by bytes for a
tiktoken rank file (`bpe.added.AddedMerges`, `RankedMerges`; the base chooses).

The record is stored at the base's size (the +0 point, the base's own counts: checked equal
to its library's on every unit) and at each added size; its measured replacements give every
language's token count after every added merge, so the added tokens a language needs to come
within reach of the pivot are exact (`analyzer.metrics.extension`).
"""

from __future__ import annotations

import time

from analyzer.bpe.pretokenize import Splitter, chunk_texts
from analyzer.errors import SETTING, setting
from analyzer.external.extension import Extended
from analyzer.identity import BASE_PRETOKENIZER, VocabKind, VocabularyId
from analyzer.settings import MAX_SIZE, RunSettings
from analyzer.store import StoredMerge, VocabularyRecord

from .. import costs
from ..costs import LocalTraining, Stage
from ..errors import RunError
from ..plan import (
    Report,
    SourceTables,
    TrainingInput,
    TrainingTexts,
    count_joined,
    joined_texts,
    pretokenizer_name,
    split_by_language,
)
from ..resolution import invalid, normalised
from ..resolved import ResolvedRun
from ..spread import Spread

KINDS = (VocabKind.EXTENSION,)
MEASURED_ALONE = ("extend",)
"""A run of this setting alone, with no sizes, measures vocabularies all the same."""


def check(settings: RunSettings, run: ResolvedRun, taken: set[str]) -> tuple[dict, dict]:
    """The bases to extend (loaded, so a base that cannot be extended stops the run before
    anything is stored), the added sizes and the languages training the additions."""
    languages = run.languages
    for name, value in (("added", settings.added), ("extend_langs", settings.extend_langs),
                        ("target", settings.target)):
        if value and not settings.extend:
            raise RunError(f"{SETTING} is for extending a production tokenizer: add "
                           f"{setting('extend')} (e.g. o200k_base)", setting=name)
    if not settings.extend:
        return {"extend": [], "added": [], "extend_langs": None}, {}
    if not settings.added:
        raise RunError(f"{SETTING} needs how many tokens to add: give {setting('added')} "
                       "(e.g. +1024,+8192)", setting="extend")
    from analyzer.external import TokenizerError
    from analyzer.external.extension import extension_base

    bases = []
    for spec in dict.fromkeys(settings.extend):
        try:
            base = extension_base(spec, downloads=True)
        except TokenizerError as error:
            raise invalid("extend", spec, f"{SETTING} {error}") from None
        bases.append(base)
    room = MAX_SIZE - max(base.size for base in bases)
    for added in settings.added:
        if isinstance(added, bool) or not isinstance(added, int) or not 1 <= added <= room:
            raise invalid("added", added, f"{SETTING} +{added}: the tokens added are from +1 to "
                          f"+{room:,} (the engine numbers ids up to {MAX_SIZE:,})")
    extend_langs = None
    if settings.extend_langs is not None:
        if not settings.extend_langs:
            raise RunError(f"{SETTING} needs at least one language code", setting="extend_langs")
        extend_langs = []
        for code in settings.extend_langs:
            lang = normalised(code, "extend_langs")
            if lang not in languages:
                raise invalid("extend_langs", code, f"{SETTING}: {lang} is not a language of "
                              f"this run ({', '.join(languages)})")
            extend_langs.append(lang)
        extend_langs = list(dict.fromkeys(extend_langs))
    tokens = sorted(set(settings.added))
    return ({"extend": bases, "added": tokens, "extend_langs": extend_langs},
            {"extend": [base.name for base in bases], "added": tokens, "extend_langs": extend_langs})


def splitters(run: ResolvedRun) -> dict[str, Splitter | None]:
    """Each extended tokenizer's own pre-tokenizer, under its name (`pretokenizer_name`)."""
    return {pretokenizer_name(base): base for base in run.made["extend"]}


def local_costs(run: ResolvedRun) -> list[LocalTraining]:
    """What each extension's training costs (`analyzer.runs.memory`), in this process: the
    base's library encodes each chunk of the base's own pre-tokenizer's tables, then BPE
    continues on the ids."""
    train_langs = run.made["extend_langs"] or run.languages
    added = max(run.made["added"], default=0)
    return [LocalTraining(VocabularyId.extension(base.name).scope, list(train_langs),
                          [Stage(costs.EXTENDED, pretokenizer_name(base), added)])
            for base in run.made["extend"]]


def records(run: ResolvedRun, texts: dict[str, list[str]], report: Report | None = None,
            source: SourceTables | None = None, spread: Spread | None = None
            ) -> list[VocabularyRecord]:
    """One record per base the run extends (its additions trained on `source`, if given)."""
    return [build(base, run, texts, report, source) for base in run.made["extend"]]


def build(base, run: ResolvedRun, texts: dict[str, list[str]], report: Report | None = None,
          source: SourceTables | None = None) -> VocabularyRecord:
    """Train the additions to `base` up to the largest added size; count every measured unit
    of every language at the base's size and at each added size; one record."""
    report = report or (lambda *args: None)
    identity = VocabularyId.extension(base.name)
    label = identity.scope
    train_langs = run.made["extend_langs"] or run.languages
    largest = base.size + max(run.made["added"])
    step = max(1, max(run.made["added"]) // 100)

    def on_merge(done: int, total: int) -> None:
        if done % step == 0 or done == total:
            report(label, "train", done, total)

    report(label, "train", 0, max(run.made["added"]))
    start = time.perf_counter()
    training_input: TrainingInput = source.only(train_langs) if source is not None else \
        TrainingTexts({lang: [texts[lang][u] for u in run.train_units] for lang in train_langs},
                      {lang: w for lang, w in run.weights.items() if lang in train_langs})
    training = training_input.train_bpe(
        largest, pretokenizer=base, base=base, min_pair_count=run.settings.min_pair_count,
        tie_break=run.settings.tie_break, progress=on_merge)
    seconds = time.perf_counter() - start
    report(label, "count", 0, 1)
    extended = Extended(base, training.merges)
    measure = {lang: [texts[lang][u] for u in run.measured_units] for lang in run.languages}
    counts, replaced, roundtrip_ok = measure_extended(extended, measure, run)
    sizes = [base.size, *(base.size + n for n in run.made["added"])]

    def count(found: list[str]) -> dict[int, list[int]]:
        by_size = measure_extended(extended, {str(i): [text] for i, text in enumerate(found)},
                                   run)[0]
        return {size: [by_size[min(size, extended.size)][str(i)][0] for i in range(len(found))]
                for size in sizes}

    joined = count_joined(joined_texts(texts, run.languages, run.measured_units, run.joined_ids),
                          count, sizes)
    report(label, "done", 1, 1)
    return VocabularyRecord(
        scope=label, kind=identity.kind, size=largest, joined=joined,
        counts={size: counts[min(size, extended.size)] for size in sizes},
        trained_bytes=training.n_bytes, merges_learned=len(training.merges),
        stop_reason=training.stop_reason, seconds=round(seconds, 3), roundtrip_ok=roundtrip_ok,
        merges=[StoredMerge(left, right, new_id, count, extended.token_bytes(new_id))
                for ((left, right), new_id), count in zip(training.merges, training.counts)],
        library=base.library, source=base.source, pretokenizer=BASE_PRETOKENIZER,
        pattern=base.pattern, base_size=base.size,
        replaced_in_training=training.replaced_by_language, replaced_in_measured=replaced)


def measure_extended(extended: Extended, measure: dict[str, list[str]], run: ResolvedRun
                     ) -> tuple[dict[int, dict[str, list[int]]], dict[str, list[int]], bool]:
    """`({size: {lang: [tokens of each unit]}}, {lang: [occurrences each added merge
    replaces]}, whether every unit's tokens spell it)`, the sizes being the base's and each
    added one (capped where training stopped). RunError if cutting and encoding chunk by
    chunk does not give the base's own count of some unit."""
    base, added = extended.base, extended.added
    languages = list(measure)
    flat = [text for lang in languages for text in measure[lang]]
    chunked = chunk_texts(flat, base)
    base_ids = base.encode_chunks(chunked.chunks)
    own = base.count(flat)
    by_chunks = [sum(len(base_ids[c]) for c in of) for of in chunked.of_text]
    if own != by_chunks:
        index = next(i for i, (a, b) in enumerate(zip(own, by_chunks)) if a != b)
        lang, unit = _where(index, measure, run)
        raise RunError(f"{{setting}} {base.name}: cut into its chunks, {lang} unit {unit} takes "
                       f"{by_chunks[index]} tokens, but {base.library} counts {own[index]}; the "
                       "extension would not match the base, so nothing was stored",
                       setting="extend", value=base.name, language=lang, unit=unit)
    traces = [added.trace(ids) for ids in base_ids]
    sizes = sorted({base.size} | {min(base.size + n, added.size) for n in run.made["added"]})
    per_chunk = {size: [trace.tokens_at(size - base.size) for trace in traces] for size in sizes}
    counts = {size: split_by_language([sum(values[c] for c in of) for of in chunked.of_text],
                                      measure)
              for size, values in per_chunk.items()}
    # Each language's chunks with their occurrences, for what each merge replaces there.
    groups, offset = [], 0
    for lang in languages:
        occurrences: dict[int, int] = {}
        for of in chunked.of_text[offset:offset + len(measure[lang])]:
            for c in of:
                occurrences[c] = occurrences.get(c, 0) + 1
        groups.append([(traces[c], n) for c, n in occurrences.items()])
        offset += len(measure[lang])
    spelled = [b"".join(extended.token_bytes(t) for c in of for t in traces[c].final)
               for of in chunked.of_text]
    roundtrip_ok = all(s == base.normalize(text).encode("utf-8") for s, text in zip(spelled, flat))
    return counts, {lang: added.replaced(group) for lang, group in zip(languages, groups)}, \
        roundtrip_ok


def _where(index: int, measure: dict[str, list[str]], run: ResolvedRun) -> tuple[str, int]:
    """The language and (1-based) corpus unit of the flat index of a measured text."""
    for lang, texts in measure.items():
        if index < len(texts):
            return lang, run.measured_units[index] + 1
        index -= len(texts)
    raise IndexError(index)
