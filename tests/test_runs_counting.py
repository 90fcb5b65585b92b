"""Counting conventions (`run --count units|joined`, `--special-tokens`): a joined run stores,
beside every unit's count, each language's units joined into one text (as Petrov et al. join
FLORES) and counted once by every kind of vocabulary; its premiums are those texts', with no
interval; a production tokenizer's added special tokens are counted only when asked."""

from __future__ import annotations

import json

import pytest

from analyzer.corpus.joined import join_units
from analyzer.store import (
    get_corpus,
    load_counts,
    load_joined_counts,
    load_texts,
    load_unit_ids,
    open_db,
    vocabularies,
)
from helpers import cli_output, dump, invoke, resolve_or_skip

DEV = {"eng_Latn": ["The cat sat.", "A dog ran far away."],
       "fra_Latn": ["Le chat était assis.", "Un chien courait loin."],
       "rus_Cyrl": ["Кошка сидела.", "Собака убежала далеко."]}
DEVTEST = {"eng_Latn": ["Birds sing  at dawn.", "Rain fell all day."],
           "fra_Latn": ["Les oiseaux chantent à l'aube.", "Il a plu toute la journée."],
           "rus_Cyrl": ["Птицы поют на рассвете.", "Дождь шёл весь день."]}


@pytest.fixture
def flores_db(tmp_path):
    """A small corpus in FLORES-200's layout, both splits ingested."""
    for split, columns in (("dev", DEV), ("devtest", DEVTEST)):
        (tmp_path / "flores" / split).mkdir(parents=True)
        for lang, lines in columns.items():
            (tmp_path / "flores" / split / f"{lang}.{split}").write_text("\n".join(lines) + "\n")
    db = tmp_path / "flores.db"
    cli_output(db, "ingest", tmp_path / "flores", "--split", "dev+devtest")
    return db


def joined_texts(db) -> dict[str, str]:
    database = open_db(db)
    corpus = get_corpus(database, "flores")
    texts = load_texts(database, corpus.id, corpus.languages)
    ids = load_unit_ids(database, corpus)
    return {lang: join_units(units, ids) for lang, units in texts.items()}


def test_the_join_is_petrovs_newline_files_split_and_joined_by_spaces(flores_db, tmp_path):
    for lang, text in joined_texts(flores_db).items():
        dev = (tmp_path / "flores" / "dev" / f"{lang}.dev").read_text()
        devtest = (tmp_path / "flores" / "devtest" / f"{lang}.devtest").read_text()
        assert text == " ".join(dev.split("\n") + devtest.split("\n"))


@pytest.mark.slow
def test_every_kind_counts_the_joined_text_as_its_own_encoder_does(flores_db, tmp_path):
    from analyzer.queries import trained_vocabulary

    tokenizer = resolve_or_skip("cl100k_base")
    cli_output(flores_db, "run", "--vocab", "270,285", "--count", "joined", "--parity",
               "--superbpe", "260", "--algorithm", "bpe,unigram", "--pretokenize", "cl100k",
               "--tokenizer", "cl100k_base", "--jobs", "1", "--out", tmp_path / "reports")
    database = open_db(flores_db)
    joined = load_joined_counts(database, 1)
    texts = joined_texts(flores_db)
    kinds = set()
    for stored in vocabularies(database, 1):
        kinds.add(stored.kind)
        for size in ([stored.size] if stored.kind.measured else [270, 285]):
            by_lang = joined[(stored.scope, stored.pretokenizer, size)]
            if stored.kind.measured:
                expected = {lang: tokenizer.count([text])[0] for lang, text in texts.items()}
            else:
                if stored.kind.has_merges:  # one that stopped early has no larger size
                    size_at = min(size, trained_vocabulary(database, 1, stored.scope, None,
                                                           stored.pretokenizer).largest)
                else:
                    size_at = size
                found = trained_vocabulary(database, 1, stored.scope, size_at, stored.pretokenizer)
                expected = {lang: len(found.pieces(texts[lang])) for lang in by_lang}
            assert by_lang == expected, (stored.scope, size)
    assert {str(kind) for kind in kinds} >= {"shared", "language", "parity", "superbpe",
                                             "unigram", "production"}
    # The units are counted as ever beside the joined texts, and are not what the run reports.
    units = {(scope, lang): sum(counts) for scope, _, size, lang, counts in load_counts(database, 1)
             if size == 100277}
    shown = json.loads(cli_output(flores_db, "export", "1"))
    assert shown["count"] == "joined"
    records = {(r["vocab"], r["lang"]): r for r in shown["records"] if r["vocab"] == "cl100k_base"}
    for lang, text in texts.items():
        record = records[("cl100k_base", lang)]
        assert record["tokens"] == joined[("cl100k_base", None, 100277)][lang]
        assert record["bytes"] == len(text.encode()) and record["chars"] == len(text)
        assert record["premium_ci_low"] is None  # one text per language: nothing to resample
        assert units[("cl100k_base", lang)] >= 1
    pivot = joined[("cl100k_base", None, 100277)]["eng_Latn"]
    assert records[("cl100k_base", "rus_Cyrl")]["premium"] == pytest.approx(
        joined[("cl100k_base", None, 100277)]["rus_Cyrl"] / pivot)
    out = cli_output(flores_db, "show", "1")
    assert "Counted as joined" in out.replace("\n", " ")
    report = (tmp_path / "reports" / "run-1.html").read_text()
    assert "Petrov et al. 2023" in report


def test_units_is_the_default_and_stores_no_joined_count(flores_db):
    cli_output(flores_db, "run", "--vocab", "300", "--jobs", "1", "--no-report")
    database = open_db(flores_db)
    assert load_joined_counts(database, 1) == {}
    shown = json.loads(cli_output(flores_db, "export", "1"))
    assert shown["count"] == "units" and shown["special_tokens"] is False
    assert shown["unit_ids"] == ["dev:1", "dev:2", "devtest:1", "devtest:2"]  # FLORES's own
    assert "Counted as" not in cli_output(flores_db, "show", "1")


def test_joined_refuses_imported_counts_and_an_unknown_convention_storing_nothing(flores_db,
                                                                                tmp_path):
    before = dump(flores_db)
    counts = tmp_path / "counts.csv"
    counts.write_text("unit,lang,tokens\n" + "".join(
        f"{u},{lang},3\n" for u in range(4) for lang in DEV))
    result = invoke(flores_db, "run", "--count", "joined", "--counts", f"other={counts}",
                    "--no-report")
    assert result.exit_code == 1
    assert "--count joined" in result.output and "--counts" in result.output
    result = invoke(flores_db, "run", "--vocab", "300", "--count", "sentences", "--no-report")
    assert result.exit_code == 1
    assert "--count must be one of units, joined, not 'sentences'" in result.output
    assert dump(flores_db) == before


def bos_tokenizer(path, texts: list[str]):
    """A tokenizer.json of our own whose post-processor puts <s> before every text."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", tokenizer.token_to_id("<s>"))])
    tokenizer.save(str(path))
    return path


def test_special_tokens_are_counted_per_text_only_when_asked(flores_db, tmp_path):
    texts = [text for lines in (*DEV.values(), *DEVTEST.values()) for text in lines]
    path = bos_tokenizer(tmp_path / "tokenizer.json", texts)
    for flags in ([], ["--special-tokens"]):
        cli_output(flores_db, "run", "--tokenizer", path, "--count", "joined", "--no-report", *flags)
    database = open_db(flores_db)
    plain, special = (
        {lang: counts for _, _, _, lang, counts in load_counts(database, run_id)}
        for run_id in (1, 2))
    for lang in DEV:
        assert special[lang] == [n + 1 for n in plain[lang]]
    joined = [load_joined_counts(database, run_id)[("tokenizer.json", None, 300)]
              for run_id in (1, 2)]
    assert {lang: n + 1 for lang, n in joined[0].items()} == joined[1]
    (stored,) = vocabularies(database, 2)
    assert stored.special_tokens == 1
    said = cli_output(flores_db, "show", "2").replace("\n", " ")
    assert "Special tokens: counted" in said and "tokenizer.json +1" in said
    said = cli_output(flores_db, "show", "1").replace("\n", " ")
    assert "not counted" in said and "would add tokenizer.json +1" in said


def test_a_superbpe_vocabulary_whose_first_stage_stopped_early_tokenizes_as_it_counted(flores_db):
    """A language's own SuperBPE vocabulary whose stage 1 ran out of pairs before T: its second
    stage starts where the first stopped, and `tokenize` splits there too, so every unit's
    pieces number what the run stored."""
    from analyzer.queries import trained_vocabulary

    cli_output(flores_db, "run", "--vocab", "270,285", "--superbpe", "278", "--pretokenize",
               "cl100k", "--jobs", "1", "--no-report")
    database = open_db(flores_db)
    texts = load_texts(database, get_corpus(database, "flores").id, list(DEV))
    (stored,) = [v for v in vocabularies(database, 1) if v.scope == "superbpe@278:eng_Latn"]
    assert stored.transition is not None and stored.transition < 278  # stage 1 stopped early
    counts = {size: units for scope, _, size, lang, units in load_counts(database, 1)
              if scope == stored.scope and lang == "eng_Latn"}
    for size, units in counts.items():
        found = trained_vocabulary(database, 1, stored.scope, min(size, 256 + stored.merges_learned),
                                   "cl100k")
        assert [len(found.pieces(text)) for text in texts["eng_Latn"]] == units, size
