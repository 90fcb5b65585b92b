"""Every input format reads into the same aligned corpus; UDHR reads with all counts right."""

from __future__ import annotations

import json

import pytest

from analyzer.corpus import detect_format, language_name, normalise_language, read_corpus

EN = ["The cat sleeps.", "Dogs bark at night."]
RU = ["Кошка спит.", "Собаки лают ночью."]
EXPECTED = {"eng_Latn": EN, "rus_Cyrl": RU}


def write_folder(folder, columns):
    folder.mkdir()
    for code, lines in columns.items():
        (folder / f"{code}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_folder_of_language_files(tmp_path):
    folder = write_folder(tmp_path / "c", {"en": EN, "ru": RU})
    (folder / "README.txt").write_text("not a language\n", encoding="utf-8")
    corpus = read_corpus(folder)
    assert corpus.format == "folder"
    assert corpus.texts == EXPECTED
    assert corpus.n_units == 2


def test_folder_paragraphs_are_blank_line_separated(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "eng_Latn.txt").write_text("One line.\nStill one.\n\n\nTwo.\n", encoding="utf-8")
    (folder / "fra_Latn.txt").write_text("Une ligne.\nEncore.\n\nDeux.", encoding="utf-8")
    corpus = read_corpus(folder, units="paragraphs")
    assert corpus.texts["eng_Latn"] == ["One line.\nStill one.", "Two."]
    assert corpus.texts["fra_Latn"] == ["Une ligne.\nEncore.", "Deux."]


def test_tsv_with_id_column(tmp_path):
    path = tmp_path / "c.tsv"
    rows = ["id\ten\tru"] + [f"u{i}\t{e}\t{r}" for i, (e, r) in enumerate(zip(EN, RU))]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    corpus = read_corpus(path)
    assert corpus.format == "tsv"
    assert corpus.texts == EXPECTED
    assert corpus.unit_ids == ["u0", "u1"]


def test_csv_with_quoted_commas(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text('eng_Latn,spa_Latn\n"Hello, world","Hola, mundo"\nBye,Adiós\n', encoding="utf-8")
    corpus = read_corpus(path)
    assert corpus.texts == {"eng_Latn": ["Hello, world", "Bye"], "spa_Latn": ["Hola, mundo", "Adiós"]}


def test_jsonl(tmp_path):
    path = tmp_path / "c.jsonl"
    lines = [json.dumps({"id": i, "eng_Latn": e, "rus_Cyrl": r}, ensure_ascii=False)
             for i, (e, r) in enumerate(zip(EN, RU))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    corpus = read_corpus(path)
    assert corpus.texts == EXPECTED
    assert corpus.unit_ids == ["0", "1"]


TMX = """<?xml version="1.0" encoding="{encoding}"?>
<!DOCTYPE tmx SYSTEM "tmx14.dtd">
<tmx version="1.4">
  <header creationtool="test" segtype="sentence" o-tmf="none" adminlang="en" srclang="en" datatype="plaintext"/>
  <body>
    <tu tuid="1"><tuv xml:lang="en"><seg>The cat <bpt i="1">&lt;b&gt;</bpt>sleeps<ept i="1">&lt;/b&gt;</ept>.</seg></tuv>
                 <tuv xml:lang="ru-RU"><seg>Кошка спит.</seg></tuv></tu>
    <tu tuid="2"><tuv xml:lang="en"><seg>Dogs bark at <hi>night</hi>.</seg></tuv>
                 <tuv xml:lang="ru-RU"><seg>Собаки лают ночью.</seg></tuv></tu>
  </body>
</tmx>
"""


@pytest.mark.parametrize("encoding", ["UTF-8", "UTF-16"])
def test_tmx_keeps_inline_text_and_drops_native_codes(tmp_path, encoding):
    path = tmp_path / "c.tmx"
    path.write_bytes(TMX.format(encoding=encoding).encode(encoding.lower()))
    corpus = read_corpus(path)
    assert corpus.texts == EXPECTED
    assert corpus.unit_ids == ["1", "2"]


def test_moses_files_named_by_language(tmp_path):
    for code, lines in (("en", EN), ("ru", RU)):
        (tmp_path / f"news.{code}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for path in (tmp_path / "news.en", tmp_path):
        corpus = read_corpus(path)
        assert corpus.format == "moses"
        assert corpus.texts == EXPECTED


def test_bom_is_dropped_and_crlf_becomes_lf(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "eng_Latn.txt").write_bytes("\ufeffOne\r\nTwo\r\n".encode())
    (folder / "deu_Latn.txt").write_bytes(b"Eins\r\nZwei\r\n")
    assert read_corpus(folder).texts == {"eng_Latn": ["One", "Two"], "deu_Latn": ["Eins", "Zwei"]}


def test_nfc_is_the_users_choice_and_is_counted(tmp_path):
    decomposed = "Cafe\u0301"
    folder = write_folder(tmp_path / "c", {"fra_Latn": [decomposed, "Thé"], "eng_Latn": ["Coffee", "Tea"]})
    assert read_corpus(folder).texts["fra_Latn"][0] == decomposed
    corpus = read_corpus(folder, nfc=True)
    assert corpus.texts["fra_Latn"][0] == "Café"
    assert corpus.nfc_changed_units == 1


def test_skip_empty_units_drops_them_in_every_language(tmp_path):
    folder = write_folder(tmp_path / "c", {"en": ["a", "", "c"], "de": ["A", "B", "C"]})
    corpus = read_corpus(folder, skip_empty_units=True)
    assert corpus.texts == {"eng_Latn": ["a", "c"], "deu_Latn": ["A", "C"]}
    assert corpus.dropped_empty_units == 1


def test_content_hash_ignores_format_and_language_order(tmp_path):
    folder = write_folder(tmp_path / "c", {"en": EN, "ru": RU})
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps({"ru": r, "en": e}) for e, r in zip(EN, RU)), encoding="utf-8")
    assert read_corpus(folder).content_hash() == read_corpus(path).content_hash()


@pytest.mark.parametrize("given, expected", [
    ("en", "eng_Latn"), ("eng", "eng_Latn"), ("en-US", "eng_Latn"), ("EN_us", "eng_Latn"),
    ("ru", "rus_Cyrl"), ("zh-Hant", "zho_Hant"), ("zh-Hans", "zho_Hans"), ("zh", "zho_Hans"),
    ("kor_Hang", "kor_Hang"), ("sr-Latn", "srp_Latn"), ("arb_Arab", "arb_Arab"),
    ("tgl_Latn", "tgl_Latn"),
])
def test_language_codes_are_normalised(given, expected):
    assert normalise_language(given) == expected


def test_language_names_for_display():
    assert language_name("rus_Cyrl") == "Russian"
    assert language_name("zho_Hant") == "Chinese (Traditional)"
    assert language_name("kor_Hang") == "Korean"


def test_detect_format_by_name(tmp_path):
    for name, fmt in (("a.tsv", "tsv"), ("a.csv", "csv"), ("a.jsonl", "jsonl"), ("a.tmx", "tmx")):
        (tmp_path / name).write_text("x", encoding="utf-8")
        assert detect_format(tmp_path / name) == fmt


@pytest.mark.corpora
def test_udhr_reads_with_all_counts_right(udhr_text):
    corpus = read_corpus(udhr_text)
    assert len(corpus.languages) == 57
    assert corpus.n_units == 32
    for code in corpus.languages:
        lines = (udhr_text / f"{code}.txt").read_text(encoding="utf-8").splitlines()
        assert corpus.texts[code] == lines


def test_reading_a_table_leaves_the_csv_module_s_field_limit_as_it_was(tmp_path):
    """The csv module's field limit is process-wide (importlib.metadata reads RECORD files
    with it): raising it for a long cell must not leave it changed, up or down."""
    import csv

    path = tmp_path / "c.tsv"
    path.write_text("eng_Latn\trus_Cyrl\n" + "x" * 200_000 + "\tкот\n", encoding="utf-8")
    before = csv.field_size_limit()
    assert read_corpus(path).texts["eng_Latn"] == ["x" * 200_000]
    assert csv.field_size_limit() == before


@pytest.mark.parametrize("format, delimiter", [("tsv", "\t"), ("csv", ",")])
def test_an_explicit_format_wins_over_the_file_s_name(tmp_path, format, delimiter):
    other = "csv" if format == "tsv" else "tsv"
    path = tmp_path / f"corpus.{other}"
    cell = "a cat, a dog" if format == "tsv" else '"a cat\ta dog"'
    path.write_text(delimiter.join(["eng_Latn", "rus_Cyrl"]) + "\n"
                    + delimiter.join([cell, "кот"]) + "\n", encoding="utf-8")
    corpus = read_corpus(path, format=format)
    expected = "a cat, a dog" if format == "tsv" else "a cat\ta dog"
    assert corpus.format == format and corpus.texts == {"eng_Latn": [expected], "rus_Cyrl": ["кот"]}
