"""The notes printed under a run's tables: what its numbers mean, how it was trained, where it stopped."""

from __future__ import annotations

import pandas as pd

from analyzer.bpe.pretokenize import NONE
from analyzer.identity import Algorithm, Role
from analyzer.runs.sample import count_floor_said
from analyzer.store import VocabularyRead

from ..settings import byte_size
from .formats import with_interval


def summary_notes(summaries: pd.DataFrame, pretokenizer: str,
                  intervals: bool = False) -> list[str]:
    """What the parity-aware vocabulary changes, in a sentence per size: the Gini of premiums
    beside the shared one's, and the total tokens against the shared vocabulary's (with their
    95 % bootstrap intervals on request)."""
    rows = summaries[summaries["pretokenizer"] == pretokenizer]
    shared = rows[rows["kind"] == Role.BASELINE.kind].set_index("size")
    notes = []
    for _, row in rows[rows["kind"] == Role.PARITY.kind].iterrows():
        base = shared.loc[row["size"]]
        gini, shared_gini, more = (
            with_interval(of[key], of[f"{key}_ci_low"], of[f"{key}_ci_high"], spec, intervals)
            for of, key, spec in ((row, "gini", ".3f"), (base, "gini", ".3f"),
                                  (row, "vs_shared", "+.1%")))
        notes.append(f"at {row['size']:,}, Gini of premiums {gini} (shared: {shared_gini}), "
                     f"for {more} tokens in all")
        if row["gini"] < row["gini_ci_low"]:
            # Not a bug: parity-aware training equalised these very units (its dev units), so
            # any resample of them is less even than the set it was fitted to.
            notes.append(f"at {row['size']:,}, the Gini lies below its interval: fitted to these "
                         "very units, resamples of them are less even (an in-sample figure)")
    return notes


def training_notes(training: dict | None) -> list[str]:
    """What a run that trained on a source says of its sample (nothing for one that trained on
    its corpus)."""
    if not training:
        return []
    languages = training["languages"]
    lines = [f"Trained on source {training['source']} (mix {training['mix']}, seed "
             f"{training['seed']}, fingerprint {training['fingerprint'][:12]}): "
             f"{byte_size(sum(item['bytes'] for item in languages))}, "
             f"{sum(item['documents'] for item in languages):,} documents in {len(languages)} "
             "languages; measured on the corpus."]
    floor = count_floor_said(training)
    if floor:
        lines.append(floor)
    short = [f"{item['lang']} ({byte_size(item['available_bytes'])} of {byte_size(item['budget'])})"
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
             if not v.kind.trained_on_one_language and not v.kind.extends]
    notes += [f"{v.scope} stopped at +{v.merges_learned}: no pair of its ids occurs often enough "
              f"in the training texts; its larger additions equal +{v.merges_learned}"
              for v, _ in stopped if v.kind.extends]
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
                     "their size at some size, their training finding no more pieces in the "
                     f"text: {shown}")
    return notes


def _name(vocabulary: VocabularyRead) -> str:
    """A vocabulary's name for a sentence: its scope, with its pre-tokenizer if it has one."""
    if vocabulary.pretokenizer in (None, NONE):
        return vocabulary.scope
    return f"{vocabulary.scope} ({vocabulary.pretokenizer})"
