"""SuperBPE vocabularies in a run: the merges are the reference's two stages, every size counts
as the reference does (stage 1's split up to the transition, stage 2's past it), the stored
per-merge replacements give every size's count exactly, and bad transitions are refused with
each face's name for the setting."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sqlite_utils import Database

from analyzer.bpe import reference as ref
from analyzer.bpe.pretokenize import PRETOKENIZERS
from analyzer.export import export_document
from analyzer.metrics import (
    equal_cost_sizes,
    load_run_data,
    own_superbpe_effects,
    superbpe_effects,
    token_curve,
)
from analyzer.runs import RunError, RunSettings, execute_run
from analyzer.settings import SettingsError
from analyzer.store import get_run, load_counts, load_merges, vocabularies
from helpers import TINY, invoke

SUPERBPE = PRETOKENIZERS["superbpe"]


def chunks(texts, pattern, around=False):
    return [c for text in texts for c in ref.pretokenize(text, pattern, around)]


@pytest.mark.parametrize("pretokenizer", ["none", "gpt2"])
def test_a_superbpe_vocabulary_is_the_reference_s_two_stages(tiny_db, pretokenizer):
    run_id = execute_run(tiny_db, RunSettings(sizes=[270, 290, 330], superbpe=[285],
                                              pretokenizers=[pretokenizer], jobs=1))
    run = get_run(tiny_db, run_id)
    assert run.superbpe == [285]
    stored = {v.scope: v for v in vocabularies(tiny_db, run_id)}
    assert stored["superbpe@285"].kind == "superbpe" and stored["superbpe@285"].transition == 285
    everything = [text for lang in run.languages for text in TINY[lang]]
    pattern = PRETOKENIZERS[pretokenizer]
    base = ref.train_many(chunks(everything, pattern), 285)
    expected = ref.continue_training(everything, base, 330, pattern=SUPERBPE, around=True)
    merges = [((m.left, m.right), m.new_id)
              for m in load_merges(tiny_db, run_id, "superbpe@285", pretokenizer)]
    assert merges == expected
    shared = [((m.left, m.right), m.new_id)
              for m in load_merges(tiny_db, run_id, "shared", pretokenizer)]
    assert merges[:285 - 256] == shared[:285 - 256]  # stage 1 is the shared prefix
    counts = {(scope, size, lang): units
              for scope, _, size, lang, units in load_counts(tiny_db, run_id)}
    for lang in run.languages:
        for size in (270, 290, 330):
            if size <= 285:
                want = [len(ref.encode_chunks(t, merges[:size - 256], pattern)) for t in TINY[lang]]
            else:
                want = [len(ref.encode_chunks(t, merges[:size - 256], SUPERBPE, around=True))
                        for t in TINY[lang]]
            assert counts["superbpe@285", size, lang] == want, (lang, size)


def test_the_stored_replacements_give_every_size_s_count_and_the_metrics_use_them(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[270, 290, 330], superbpe=[285], jobs=1,
                                              per_language=False))
    data = load_run_data(tiny_db, run_id)
    assert data.fairness is not None
    measured = data.fairness.measured["superbpe@285", "none"]
    counts = {(scope, size, lang): units for scope, _, size, lang, units in load_counts(tiny_db, run_id)}
    for lang in data.run.languages:
        curve = token_curve(int(data.unit_bytes[lang].sum()), measured[lang])
        for size in (270, 290, 330):
            assert curve[size - 256] == sum(counts["superbpe@285", size, lang]), (lang, size)
    assert {row["vocab"] for row in equal_cost_sizes(data)} == {"shared", "superbpe@285"}
    effects = superbpe_effects(data)
    assert {(row["lang"], row["before_size"]) for row in effects} == \
        {(lang, 270) for lang in data.run.languages}
    pivot = next(row for row in effects if row["lang"] == data.run.pivot)
    assert pivot["premium"] == pivot["shared_premium"] == 1.0
    for row in effects:
        assert 0.0 <= row["superword_share"] <= 1.0
    document = export_document(tiny_db, run_id, data)
    assert document["superbpe"] == [285] and document["superbpe_effects"] == effects
    assert next(v for v in document["vocabularies"] if v["scope"] == "superbpe@285")["transition"] == 285


@pytest.mark.parametrize("pretokenizer", ["none", "words"])
def test_each_language_s_own_superbpe_is_the_reference_s_two_stages_on_its_texts(tiny_db,
                                                                                 pretokenizer):
    run_id = execute_run(tiny_db, RunSettings(sizes=[270, 290, 330], superbpe=[285], jobs=1,
                                              pretokenizers=[pretokenizer], min_pair_count=1))
    stored = {v.scope: v for v in vocabularies(tiny_db, run_id)}
    pattern = PRETOKENIZERS[pretokenizer]
    counts = {(scope, size, lang): units
              for scope, _, size, lang, units in load_counts(tiny_db, run_id)}
    run = get_run(tiny_db, run_id)
    for lang in run.languages:
        scope = f"superbpe@285:{lang}"
        assert stored[scope].kind == "language-superbpe"
        base = ref.train_many(chunks(TINY[lang], pattern), 285, min_pair_count=1)
        expected = ref.continue_training(TINY[lang], base, 330, pattern=SUPERBPE, around=True,
                                         min_pair_count=1)
        merges = [((m.left, m.right), m.new_id)
                  for m in load_merges(tiny_db, run_id, scope, pretokenizer)]
        assert merges == expected, lang
        own = [((m.left, m.right), m.new_id) for m in load_merges(tiny_db, run_id, lang, pretokenizer)]
        stage_one = own[:285 - 256]  # the language's own prefix (shorter if it stopped early)
        assert merges[:len(stage_one)] == stage_one
        # Its second stage starts where the first stopped: T, or earlier if it ran out of pairs.
        assert stored[scope].transition == (256 + len(stage_one) if len(merges) > len(stage_one)
                                            else 285)
        # It counts its language and the pivot, as the language's own vocabulary does.
        counted = {key[2] for key in counts if key[0] == scope}
        assert counted == {lang, run.pivot}
        for size in (270, 330):
            split = (pattern, False) if size <= 285 else (SUPERBPE, True)
            assert counts[scope, size, lang] == [
                len(ref.encode_chunks(t, merges[:size - 256], split[0], around=split[1]))
                for t in TINY[lang]], (lang, size)
    data = load_run_data(tiny_db, run_id)
    effects = {row["lang"]: row for row in own_superbpe_effects(data)}
    assert set(effects) == set(run.languages)
    pivot = run.pivot
    for lang, row in effects.items():
        mine, theirs = f"superbpe@285:{lang}", f"superbpe@285:{pivot}"
        assert row["premium"] == pytest.approx(sum(counts[mine, 330, lang])
                                               / sum(counts[theirs, 330, pivot]))
        assert row["own_premium"] == pytest.approx(sum(counts[lang, 330, lang])
                                                   / sum(counts[pivot, 330, pivot]))
        assert row["tokens_change"] == pytest.approx(sum(counts[mine, 330, lang])
                                                     / sum(counts[lang, 330, lang]) - 1)
    assert effects[pivot]["premium"] == 1.0
    document = export_document(tiny_db, run_id, data)
    assert document["own_superbpe_effects"] == list(effects.values())


@pytest.mark.parametrize("settings, message", [
    (dict(sizes=[300], superbpe=[300]), "superbpe 300: the transition is a size from 256 to below"),
    (dict(sizes=[300], superbpe=[200]), "superbpe 200: each must be from 256 to"),
    (dict(sizes=[], superbpe=[280], tokenizers=["cl100k_base"]), "superbpe trains a vocabulary"),
])
def test_a_transition_outside_the_sizes_is_refused_naming_the_setting(tiny_db, settings, message):
    before = list(tiny_db.iterdump())
    with pytest.raises((RunError, SettingsError), match=message) as raised:
        execute_run(tiny_db, RunSettings(jobs=1, **settings))
    assert raised.value.setting == "superbpe"
    assert list(tiny_db.iterdump()) == before


def test_the_command_line_takes_superbpe_and_names_its_flag(db):
    before = list(Database(db).iterdump())
    result = invoke(db, "run", "--vocab", "300", "--superbpe", "300", "--jobs", "1")
    assert result.exit_code == 1 and "--superbpe 300: the transition" in result.output
    result = invoke(db, "run", "--vocab", "300", "--superbpe", "x", "--jobs", "1")
    assert result.exit_code == 1 and "--superbpe 'x' is not a whole number" in result.output
    assert list(Database(db).iterdump()) == before
    result = invoke(db, "run", "--vocab", "270,300", "--superbpe", "280,290", "--jobs", "1",
                    "--no-report")
    assert result.exit_code == 0, result.output
    assert json.loads(invoke(db, "runs", "--json").stdout)[0]["superbpe"] == [280, 290]
    shown = json.loads(invoke(db, "show", "1", "--vocab", "superbpe@290", "--json").stdout)
    assert {r["vocab"] for r in shown["records"]} >= {"superbpe@280", "superbpe@290"}
    merges = invoke(db, "merges", "1", "--vocab", "superbpe@290", "--by-language")
    assert merges.exit_code == 0, merges.output
    assert np.isfinite([s["gini"] for s in shown["summaries"] if s["vocab"] == "superbpe@290"]).all()


def test_tokenize_past_the_transition_splits_as_stage_two(tiny_db):
    from analyzer.queries import trained_vocabulary

    run_id = execute_run(tiny_db, RunSettings(sizes=[270, 330], superbpe=[285], jobs=1,
                                              pretokenizers=["gpt2"], per_language=False))
    counts = {(scope, size, lang): units for scope, _, size, lang, units in load_counts(tiny_db, run_id)}
    for size in (270, 330):
        vocabulary = trained_vocabulary(tiny_db, run_id, "superbpe@285", size, "gpt2")
        for lang in TINY:
            assert [len(vocabulary.pieces(text)) for text in TINY[lang]] == \
                counts["superbpe@285", size, lang], (size, lang)
