"""FLORES-200's release layout (dev/<lang>.dev, devtest/<lang>.devtest) read by `ingest`: the
same units and texts as a hand-made folder of the split, each unit keeping its FLORES id; what
is missing or misaligned named."""

from __future__ import annotations

import sqlite3

import pytest

from analyzer.corpus import CorpusError, read_corpus

DEV = {"eng_Latn": ["One.", "Two."], "fra_Latn": ["Un.", "Deux."]}
DEVTEST = {"eng_Latn": ["Three.", "Four.", "Five."], "fra_Latn": ["Trois.", "Quatre.", "Cinq."]}


def flores_folder(root, dev=DEV, devtest=DEVTEST):
    for split, columns in (("dev", dev), ("devtest", devtest)):
        if columns is None:
            continue
        (root / split).mkdir(parents=True)
        for lang, lines in columns.items():
            (root / split / f"{lang}.{split}").write_text("\n".join(lines) + "\n")
    (root / "metadata_dev.tsv").write_text("URL\tdomain\n")  # beside the texts, as released
    return root


def hand_made(root, columns):
    root.mkdir()
    for lang, lines in columns.items():
        (root / f"{lang}.txt").write_text("\n".join(lines) + "\n")
    return root


@pytest.mark.parametrize("split, columns, ids", [
    (None, DEVTEST, ["devtest:1", "devtest:2", "devtest:3"]),
    ("dev", DEV, ["dev:1", "dev:2"]),
    ("dev+devtest", {lang: DEV[lang] + DEVTEST[lang] for lang in DEV},
     ["dev:1", "dev:2", "devtest:1", "devtest:2", "devtest:3"]),
])
def test_a_split_reads_as_the_same_texts_in_a_folder_with_flores_ids(tmp_path, split, columns, ids):
    corpus = read_corpus(flores_folder(tmp_path / "flores"), split=split)
    assert corpus.format == "flores200"
    assert corpus.texts == read_corpus(hand_made(tmp_path / "folder", columns)).texts
    assert corpus.unit_ids == ids


def test_ingest_stores_the_ids_and_says_the_format(tmp_path):
    from helpers import cli_output

    db = tmp_path / "a.db"
    out = cli_output(db, "ingest", flores_folder(tmp_path / "flores"), "--split", "dev+devtest")
    assert "flores200" in out and "5 units" in out
    stored = sqlite3.connect(db).execute("SELECT source_id FROM units ORDER BY unit").fetchall()
    assert [row[0] for row in stored] == ["dev:1", "dev:2", "devtest:1", "devtest:2", "devtest:3"]


@pytest.mark.parametrize("dev, devtest, split, said", [
    (DEV, None, "devtest", "no devtest/<lang>.devtest files (the FLORES-200 layout); the splits here: dev"),
    (DEV, {"eng_Latn": DEVTEST["eng_Latn"]}, "dev+devtest", "different languages (fra_Latn in only one)"),
    (DEV, {"eng_Latn": ["a"], "fra_Latn": ["a", "b"]}, "devtest",
     "misaligned: the files have different numbers of lines (devtest/eng_Latn.devtest: 1, "
     "devtest/fra_Latn.devtest: 2)"),
])
def test_what_is_missing_or_misaligned_is_named(tmp_path, dev, devtest, split, said):
    with pytest.raises(CorpusError) as caught:
        read_corpus(flores_folder(tmp_path / "flores", dev, devtest), split=split)
    assert said in str(caught.value)


def test_a_split_is_refused_for_another_format_and_nothing_is_stored(tmp_path):
    from helpers import invoke

    db = tmp_path / "a.db"
    result = invoke(db, "ingest", hand_made(tmp_path / "folder", DEV), "--split", "dev")
    assert result.exit_code != 0
    assert "--split is for FLORES's layouts" in result.output
    assert not db.exists() or not sqlite3.connect(db).execute(
        "SELECT name FROM sqlite_master WHERE name = 'corpora'").fetchall() or \
        not sqlite3.connect(db).execute("SELECT * FROM corpora").fetchall()


def test_an_unknown_split_and_a_file_given_as_the_release_are_refused(tmp_path):
    folder = flores_folder(tmp_path / "flores")
    with pytest.raises(CorpusError, match="must be one of dev, devtest, dev\\+devtest, not 'test'"):
        read_corpus(folder, split="test")
    with pytest.raises(CorpusError, match="the flores200 format needs the release's folder"):
        read_corpus(folder / "dev" / "eng_Latn.dev", format="flores200")


def test_languages_of_the_other_split_only_are_said_not_dropped_without_a_word(tmp_path):
    """Issue 50, item 21: a language present only in dev/ was left out of a devtest ingest
    without a word."""
    from helpers import cli_output

    dev = {**DEV, "deu_Latn": ["Eins.", "Zwei."], "ita_Latn": ["Uno.", "Due."]}
    folder = flores_folder(tmp_path / "flores", dev=dev)
    corpus = read_corpus(folder)
    assert sorted(corpus.texts) == ["eng_Latn", "fra_Latn"]
    assert corpus.notes == ["2 languages are in dev/ only, so not in this corpus of devtest: "
                            "deu_Latn, ita_Latn (--split dev reads them)"]
    out = " ".join(cli_output(tmp_path / "a.db", "ingest", folder).split())  # folded at 80
    assert "Note: 2 languages are in dev/ only" in out and "deu_Latn, ita_Latn" in out
    assert read_corpus(folder, split="dev").notes == []  # dev holds every language
