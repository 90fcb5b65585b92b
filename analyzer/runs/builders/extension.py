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

from analyzer.bpe.pretokenize import chunk_texts
from analyzer.external.extension import Extended
from analyzer.identity import BASE_PRETOKENIZER, VocabKind, VocabularyId
from analyzer.store import StoredMerge, VocabularyRecord

from ..errors import RunError
from ..plan import (
    Report,
    SourceTables,
    TrainingInput,
    TrainingTexts,
    count_joined,
    joined_texts,
    split_by_language,
)
from ..resolution import ResolvedRun

KINDS = (VocabKind.EXTENSION,)


def records(run: ResolvedRun, texts: dict[str, list[str]], report: Report | None = None,
            source: SourceTables | None = None) -> list[VocabularyRecord]:
    """One record per base the run extends (its additions trained on `source`, if given)."""
    return [build(base, run, texts, report, source) for base in run.extensions]


def build(base, run: ResolvedRun, texts: dict[str, list[str]], report: Report | None = None,
          source: SourceTables | None = None) -> VocabularyRecord:
    """Train the additions to `base` up to the largest added size; count every measured unit
    of every language at the base's size and at each added size; one record."""
    report = report or (lambda *args: None)
    identity = VocabularyId.extension(base.name)
    label = identity.scope
    train_langs = run.extend_langs or run.languages
    largest = base.size + max(run.added)
    step = max(1, max(run.added) // 100)

    def on_merge(done: int, total: int) -> None:
        if done % step == 0 or done == total:
            report(label, "train", done, total)

    report(label, "train", 0, max(run.added))
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
    sizes = [base.size, *(base.size + n for n in run.added)]

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
    sizes = sorted({base.size} | {min(base.size + n, added.size) for n in run.added})
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
