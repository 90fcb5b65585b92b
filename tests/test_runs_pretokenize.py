"""Runs with several pre-tokenizers: every trained vocabulary once per split rule, each count
equal to the reference on chunks, the chunks per unit stored, old runs read as "none"."""

from __future__ import annotations

import pytest
from sqlite_utils import Database

from analyzer.bpe import reference as ref
from analyzer.bpe.pretokenize import PRETOKENIZERS
from analyzer.export import export_csv, export_document, show_document
from analyzer.metrics import language_metrics, load_run_data
from analyzer.migrations import migrations
from analyzer.report import build_page
from analyzer.runs import RunError, RunSettings, execute_run
from analyzer.store import get_run, load_chunk_counts, load_counts, load_merges, open_db, vocabularies
from helpers import TINY


def test_every_vocabulary_is_trained_once_per_pretokenizer_and_counts_like_the_reference(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[270, 300], pretokenizers=["none", "cl100k", "words"],
                                              jobs=1))
    run = get_run(tiny_db, run_id)
    assert run.pretokenizers == ["none", "cl100k", "words"]
    stored = {(v.scope, v.pretokenizer): v for v in vocabularies(tiny_db, run_id)}
    assert len(stored) == 3 * 4  # shared + three languages, under each rule
    assert stored["shared", "cl100k"].pattern == PRETOKENIZERS["cl100k"]
    assert stored["shared", "none"].pattern is None
    counts = {(scope, pretokenizer, size, lang): units
              for scope, pretokenizer, size, lang, units in load_counts(tiny_db, run_id)}
    for name in ("cl100k", "words"):
        pattern = PRETOKENIZERS[name]
        chunks = [c for lang in run.languages for text in TINY[lang] for c in ref.pretokenize(text, pattern)]
        merges = ref.train_many(chunks, 300)
        stored_merges = [((m.left, m.right), m.new_id) for m in load_merges(tiny_db, run_id, "shared", name)]
        assert stored_merges == merges
        for lang in run.languages:
            assert counts["shared", name, 300, lang] == \
                [len(ref.encode_chunks(text, merges, pattern)) for text in TINY[lang]]
        own = ref.train_many([c for t in TINY["kor_Hang"] for c in ref.pretokenize(t, pattern)], 270)
        assert counts["kor_Hang", name, 270, "kor_Hang"] == \
            [len(ref.encode_chunks(t, own, pattern)) for t in TINY["kor_Hang"]]
    chunk_counts = load_chunk_counts(tiny_db, run_id)
    assert set(chunk_counts) == {"cl100k", "words"}
    assert chunk_counts["words"]["eng_Latn"] == [len(t.split()) for t in TINY["eng_Latn"]]


def test_pretokenizers_that_split_around_their_matches_run_like_the_reference(tiny_db):
    """`superbpe` and `split:PATTERN` cut around their matches: words may join (superwords)."""
    run_id = execute_run(tiny_db, RunSettings(sizes=[290], pretokenizers=["superbpe", "split:[,.!?]"],
                                              per_language=False, jobs=1))
    run = get_run(tiny_db, run_id)
    counts = {(scope, pretokenizer, size, lang): units
              for scope, pretokenizer, size, lang, units in load_counts(tiny_db, run_id)}
    for name, pattern in (("superbpe", PRETOKENIZERS["superbpe"]), ("split:[,.!?]", "[,.!?]")):
        chunks = [c for lang in run.languages for text in TINY[lang]
                  for c in ref.pretokenize(text, pattern, around=True)]
        merges = ref.train_many(chunks, 290)
        stored = [((m.left, m.right), m.new_id) for m in load_merges(tiny_db, run_id, "shared", name)]
        assert stored == merges
        for lang in run.languages:
            assert counts["shared", name, 290, lang] == \
                [len(ref.encode_chunks(text, merges, pattern, around=True)) for text in TINY[lang]]


@pytest.mark.slow
def test_records_csv_and_the_page_carry_the_pretokenizer(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[300], pretokenizers=["none", "gpt2"],
                                              tokenizers=["cl100k_base"], jobs=1))
    data = load_run_data(tiny_db, run_id)
    frame = language_metrics(data, resamples=50)
    records = show_document(data, frame)["records"]
    assert {r["pretokenizer"] for r in records} == {"none", "gpt2", None}
    gpt2 = [r for r in records if r["pretokenizer"] == "gpt2" and r["vocab"] == "shared"]
    pivot_chunks = next(r["chunks"] for r in gpt2 if r["lang"] == "eng_Latn")
    russian = next(r for r in gpt2 if r["lang"] == "rus_Cyrl")
    assert russian["chunk_premium"] == pytest.approx(russian["chunks"] / pivot_chunks)
    none = [r for r in records if r["pretokenizer"] == "none"]
    assert all(r["chunks"] is None and r["chunk_premium"] is None for r in none)
    assert export_csv(data, frame).splitlines()[0].startswith("vocab,kind,pretokenizer,size,lang")
    document = export_document(tiny_db, run_id)
    assert document["pretokenizers"] == ["none", "gpt2"]
    assert {(v["scope"], v["pretokenizer"]) for v in document["vocabularies"]} >= \
        {("shared", "none"), ("shared", "gpt2"), ("cl100k_base", None)}
    page = build_page(tiny_db, run_id)
    titles = [figure.layout.title.text for figure in page.figures]
    assert any("under each split rule" in title for title in titles)
    assert page.figures[0].layout.updatemenus  # the headline's pre-tokenizer selector
    assert "pre-tokenizer gpt2" in page.html


def test_a_pattern_of_the_users_that_loses_text_is_refused_before_anything_is_stored(tiny_db):
    before = list(Database(tiny_db.path).iterdump())
    with pytest.raises(RunError, match=r"pretokenizers re:\\w\+ loses text: eng_Latn unit 1 of "
                                       r"corpus 'tiny', character 3") as raised:
        execute_run(tiny_db, RunSettings(sizes=[300], pretokenizers=[r"re:\w+"], jobs=1))
    error = raised.value  # and the same, as fields
    assert (error.setting, error.value, error.language, error.unit) == \
        ("pretokenizers", r"re:\w+", "eng_Latn", 1)
    with pytest.raises(RunError, match="unknown pre-tokenizer 'gtp2'"):
        execute_run(tiny_db, RunSettings(sizes=[300], pretokenizers=["gtp2"], jobs=1))
    assert list(Database(tiny_db.path).iterdump()) == before


def test_runs_stored_before_pretokenizers_read_back_as_none(tmp_path, tiny_corpus):
    from analyzer.corpus import read_corpus
    from analyzer.store import save_corpus

    path = tmp_path / "old.db"
    db = open_db(path)
    save_corpus(db, read_corpus(tiny_corpus), "tiny")
    run_id = execute_run(db, RunSettings(sizes=[300], jobs=1))
    expected = load_counts(db, run_id)
    db.close()
    raw = Database(path)  # take the database back to before m006, as an older version left it
    # (and before m008, m009, m011, m014 and m019, which came later still and would otherwise
    # count as applied: m006 rebuilds the vocabularies table)
    raw.execute("DELETE FROM _sqlite_migrations WHERE name IN ('m006_pretokenizers', "
                "'m008_superbpe', 'm009_extension', 'm011_request_framing', "
                "'m014_counting_conventions', 'm019_counting_engine')")
    for statement in ["ALTER TABLE vocabularies DROP COLUMN engine",
                      "ALTER TABLE vocabularies DROP COLUMN special_tokens",
                      "ALTER TABLE runs DROP COLUMN count_convention",
                      "ALTER TABLE runs DROP COLUMN special_tokens",
                      "ALTER TABLE token_counts DROP COLUMN joined_tokens",
                      "ALTER TABLE token_counts DROP COLUMN split_words",
                      "DROP TABLE vocabulary_scripts", "DROP TABLE vocabulary_overlaps","ALTER TABLE vocabularies DROP COLUMN framing",
                      "ALTER TABLE vocabularies DROP COLUMN framing_basis","ALTER TABLE runs DROP COLUMN extend", "ALTER TABLE runs DROP COLUMN added",
                      "ALTER TABLE runs DROP COLUMN extend_langs",
                      "ALTER TABLE runs DROP COLUMN target",
                      "ALTER TABLE vocabularies DROP COLUMN base_size",
                      "ALTER TABLE runs DROP COLUMN superbpe",
                      "ALTER TABLE vocabularies DROP COLUMN transition",
                      "DROP TABLE chunk_counts", "ALTER TABLE runs DROP COLUMN pretokenizers",
                      "ALTER TABLE vocabularies DROP COLUMN pattern",
                      "ALTER TABLE vocabularies RENAME COLUMN pretokenizer TO unused"]:
        raw.execute(statement)
    raw.conn.commit()
    raw.close()
    upgraded = open_db(path)
    assert "m006_pretokenizers" in [m.name for m in migrations.applied(upgraded)]
    assert get_run(upgraded, run_id).pretokenizers == ["none"]
    assert {v.pretokenizer for v in vocabularies(upgraded, run_id)} == {"none"}
    assert load_counts(upgraded, run_id) == [(s, "none", *rest) for s, _, *rest in expected]
