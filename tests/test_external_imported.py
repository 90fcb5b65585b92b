"""Counts measured elsewhere (`analyzer.external.imported`): read, checked on their own and
against a run, refused naming the file, the line and the value."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analyzer.external.imported import CountsError, parse_counts, parse_spec, read_counts

LANGS = ["eng_Latn", "kor_Hang"]


def counts_text(rows: list[tuple], header: str = "unit,lang,tokens") -> str:
    return header + "\n" + "".join(",".join(map(str, row)) + "\n" for row in rows)


def test_rows_are_read_in_any_column_order_with_codes_normalised_and_extra_columns_ignored():
    text = "tokens,note,language,unit\n3,x,en,0\n5,y,kor_Hang,0\n4,,eng_Latn,1\n6,z,kor_Hang,1\n"
    imported = parse_counts("m", text, "f.csv")
    assert imported.counts_for(LANGS, [0, 1], n_units=2) == {"eng_Latn": [3, 4],
                                                            "kor_Hang": [5, 6]}
    # only the measured units, in their order; other languages of the file are not used
    assert imported.counts_for(["kor_Hang"], [1], n_units=2) == {"kor_Hang": [6]}


@given(st.dictionaries(st.tuples(st.sampled_from(LANGS), st.integers(0, 9)),
                       st.integers(1, 2**32 - 1), min_size=1))
def test_whatever_is_written_is_read_back(table):
    rows = [(unit, lang, tokens) for (lang, unit), tokens in table.items()]
    imported = parse_counts("m", counts_text(rows), "f.csv")
    assert {key: tokens for key, (tokens, _) in imported.rows.items()} == table


@pytest.mark.parametrize("text, where, says", [
    ("", "line 1", "empty"),
    ("unit,lang\n0,en\n", "line 1", "no tokens column"),
    ("unit,lang,tokens,unit\n", "line 1", "unit twice"),
    ("unit,lang,tokens\n", "", "a header and no counts"),
    ("unit,lang,tokens\n0,en,3\n0,en,4\n", "line 3", "eng_Latn unit 0 again (first on line 2)"),
    ("unit,lang,tokens\n0,en,3.5\n", "line 2", "tokens '3.5' is not a whole number"),
    ("unit,lang,tokens\n0,en,0\n", "line 2", "tokens '0' is not a whole number of tokens (1 or more)"),
    ("unit,lang,tokens\n0,en,-2\n", "line 2", "tokens '-2'"),
    ("unit,lang,tokens\n-1,en,2\n", "line 2", "unit '-1' is not a unit index"),
    ("unit,lang,tokens\nfirst,en,2\n", "line 2", "unit 'first'"),
    ("unit,lang,tokens\n0,en,2\n1,xx-nonsense-code,2\n", "line 3", "xx-nonsense-code"),
    ("unit,lang,tokens\n0,en,2,9\n", "line 2", "4 fields, the header has 3"),
    ("unit,lang,tokens\n0,en,99999999999999999999\n", "line 2", "tokens 99999999999999999999 is above 4,294,967,295"),
    ("unit,lang,tokens\n0,en,4294967296\n", "line 2", "tokens 4294967296 is above 4,294,967,295"),
    ("unit,lang,tokens\n99999999999999999999,en,3\n", "line 2", "unit 99999999999999999999 is above"),
])
def test_a_malformed_file_is_refused_naming_the_line_and_value(text, where, says):
    with pytest.raises(CountsError) as caught:
        parse_counts("m", text, "f.csv")
    message = str(caught.value)
    assert message.startswith(f"f.csv {where}".strip()) and says in message, message
    assert caught.value.file == "f.csv" and caught.value.setting == "counts"
    if where:
        assert caught.value.line == int(where.split()[1])


def test_counts_that_do_not_cover_the_run_are_refused_naming_what_is_missing():
    imported = parse_counts("m", counts_text([(0, "en", 3), (1, "en", 4), (0, "kor_Hang", 5)]), "f.csv")
    with pytest.raises(CountsError, match=r"f.csv: no count for kor_Hang unit 1; every measured"):
        imported.counts_for(LANGS, [0, 1], n_units=2)
    with pytest.raises(CountsError, match=r"no counts for rus_Cyrl, a language of the run"):
        imported.counts_for(["eng_Latn", "rus_Cyrl"], [0], n_units=2)
    with pytest.raises(CountsError, match=r"f.csv line 3: unit 1 is not in the corpus \(its "
                                          r"units are 0 to 0\)") as caught:
        imported.counts_for(["eng_Latn"], [0], n_units=1)
    assert caught.value.line == 3 and caught.value.unit == 2  # errors count units from 1
    many = parse_counts("m", counts_text([(0, "en", 3)] + [(u, "kor_Hang", 1) for u in range(1)]), "f")
    with pytest.raises(CountsError, match=r"no count for eng_Latn unit 1 and 2 more"):
        many.counts_for(LANGS, [0, 1, 2, 3], n_units=4)


def test_files_are_read_as_utf8_with_a_bom_and_refused_when_not_text(tmp_path):
    path = tmp_path / "c.csv"
    path.write_bytes(b"\xef\xbb\xbfunit,lang,tokens\r\n0,en,3\r\n")
    imported = read_counts("gemini-2.5=c.csv")
    assert imported.name == "gemini-2.5" and imported.rows == {("eng_Latn", 0): (3, 2)}
    assert "c.csv (SHA-256 " in imported.source and "1 rows" in imported.source
    path.write_bytes(b"unit,lang,tokens\n0,en,3\n1,en,\xff\n")
    with pytest.raises(CountsError, match=r"c.csv line 3: not UTF-8 text"):
        read_counts("m=c.csv")
    with pytest.raises(CountsError, match=r"missing.csv: cannot be read"):
        read_counts("m=missing.csv")
    with pytest.raises(CountsError, match=r"cannot be read"):
        read_counts(f"m={tmp_path}")  # a folder


@pytest.mark.parametrize("spec", ["counts.csv", "m=", "=c.csv", "-x=c.csv", "a b=c.csv",
                                  "m<script>=c.csv", "x" * 101 + "=c.csv",
                                  "extend:o200k_base=c.csv", "superbpe@300=c.csv"])
def test_a_spec_needs_a_plain_name_and_a_file(spec):
    with pytest.raises(CountsError) as caught:
        parse_spec(spec)
    assert caught.value.setting == "counts" and caught.value.value == spec
