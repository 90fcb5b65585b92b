"""The bill (`analyzer.metrics.bill`, issue 71): what a month's workload costs on each priced
model, from the run's counts, in `show`, `show --json`, `export` and the service alike."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.errors import Invalid
from analyzer.metrics.bill import Workload, month_tokens, parse_amount, parse_mix
from helpers import cli_output, invoke, resolve_or_skip

LANGS = ["eng_Latn", "hin_Deva", "tha_Thai"]
COUNTS = st.integers(1, 10**7)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a loaded machine
@given(st.fixed_dictionaries({t: st.fixed_dictionaries(dict.fromkeys(LANGS, COUNTS))
                              for t in ("a", "b")}),
       st.lists(st.integers(0, 100), min_size=3, max_size=3).filter(any),
       st.integers(1, 10**9), st.integers(0, 10**6), st.integers(0, 20))
def test_a_month_is_the_corpus_copied_as_often_as_the_workload_needs(totals, weights, tokens,
                                                                     requests, framing):
    """The literal reading: the workload is `tokens / T(eng, a)` copies of the measured content,
    each language's share of it counted as the run counted that language; plus each request's
    framing."""
    mix = {lang: w / sum(weights) for lang, w in zip(LANGS, weights)}
    workload = Workload(tokens, mix, "a", requests)
    copies = tokens / totals["a"]["eng_Latn"]
    literal = sum(copies * mix[lang] * totals["b"][lang] for lang in LANGS) + requests * framing
    assert month_tokens(workload, totals, "eng_Latn", "b", framing) == pytest.approx(literal)
    alone = Workload(tokens, {"eng_Latn": 1.0}, "a")
    assert month_tokens(alone, totals, "eng_Latn", "a") == pytest.approx(tokens)


def test_amounts_and_mixes_are_read_as_people_write_them_or_refused_by_name():
    assert parse_amount("2.5M") == 2_500_000 and parse_amount("1B") == 10**9
    assert parse_amount("1e8") == 10**8
    for bad in ("", "-3", "0", "lots", "1e99", "1e", "nan", "inf"):
        with pytest.raises(Invalid, match="positive amount"):
            parse_amount(bad)
    assert parse_mix("eng_Latn=1,hin_Deva=3", LANGS) == {"eng_Latn": 0.25, "hin_Deva": 0.75}
    for bad, said in (("eng_Latn", "LANG=SHARE"), ("xx=1", "not a language of the run"),
                      ("eng_Latn=-1", "0 or more"), ("eng_Latn=0", "add up to nothing"),
                      ("eng_Latn=1,eng_Latn=2", "twice"), ("eng_Latn=inf", "0 or more")):
        with pytest.raises(Invalid, match=said):
            parse_mix(bad, LANGS)


@pytest.fixture
def priced(db):
    """A run that measured two priced tokenizers."""
    for name in ("cl100k_base", "o200k_base"):
        resolve_or_skip(name)
    cli_output(db, "run", "-t", "cl100k_base", "-t", "o200k_base", "--no-report")
    return db


def test_every_face_prices_the_same_workload_the_same(priced):
    from fastapi.testclient import TestClient

    from analyzer.serve import create_app

    args = ["--bill", "3M", "--mix", "eng_Latn=2,kor_Hang=1", "--counted-by", "o200k_base"]
    shown = json.loads(cli_output(priced, "show", "1", "--json", *args))["bill"]
    exported = json.loads(cli_output(priced, "export", "1", *args))["bill"]
    with TestClient(create_app(priced), base_url="http://127.0.0.1") as client:
        served = client.get("/api/runs/1", params={"bill": "3M", "mix": "eng_Latn=2,kor_Hang=1",
                                                  "counted_by": "o200k_base"}).json()["bill"]
    assert shown == exported == served
    assert shown["workload"] == {"tokens": 3e6, "reference": "eng_Latn", "counted_by": "o200k_base",
                                 "mix": {"eng_Latn": 2 / 3, "kor_Hang": 1 / 3}, "requests": 0}
    rows = shown["rows"]
    assert [row["cost"] for row in rows] == sorted(row["cost"] for row in rows)
    assert {row["tokenizer"] for row in rows} == {"cl100k_base", "o200k_base"}
    records = json.loads(cli_output(priced, "show", "1", "--json"))["records"]
    tokens = {(r["vocab"], r["lang"]): r["tokens"] for r in records}
    for row in rows:
        expected = 3e6 / tokens[("o200k_base", "eng_Latn")] * (
            2 / 3 * tokens[(row["tokenizer"], "eng_Latn")] + 1 / 3 * tokens[(row["tokenizer"], "kor_Hang")])
        assert row["tokens"] == round(expected) or row["tokens"] == int(expected)
        assert row["cost"] == pytest.approx(expected * row["input_price"] / 1e6)
        assert row["cost_ci_low"] <= row["cost"] <= row["cost_ci_high"]
    assert shown["said"].startswith(f"For 3,000,000 tokens a month of English as o200k_base "
                                    f"counts it, 66.7% English, 33.3% Korean, the cheapest model is "
                                    f"{rows[0]['model']}: ")
    printed = cli_output(priced, "show", "1", *args)
    assert " ".join(printed.split()).count(rows[0]["model"]) >= 2  # the sentence and the table


def test_requests_pay_their_framing(priced):
    plain = json.loads(cli_output(priced, "show", "1", "--json", "--bill", "1M"))["bill"]["rows"]
    framed = json.loads(cli_output(priced, "show", "1", "--json", "--bill", "1M",
                                   "--requests", "1000"))["bill"]["rows"]
    by_model = {row["model"]: row for row in plain}
    for row in framed:
        if row["framing"] is not None:
            assert row["tokens"] - by_model[row["model"]]["tokens"] in range(
                1000 * row["framing"] - 1, 1000 * row["framing"] + 2)


def test_a_bad_workload_is_refused_in_words(priced):
    for args, said in ((["--bill", "many"], "positive amount"),
                       (["--bill", "1M", "--mix", "eng_Latn=1,xx_Latn=2"], "not a language"),
                       (["--bill", "1M", "--counted-by", "o200k"], "did you mean o200k_base"),
                       (["--mix", "eng_Latn=1"], "describe the workload of --bill")):
        result = invoke(priced, "show", "1", *args)
        assert result.exit_code == 1 and said in result.output, result.output


def test_huge_shares_partial_mixes_and_no_requests_are_read_as_meant():
    """Found by the attack pass: shares of 1e308 summed to infinity and priced everything at
    $0; a mix of two languages of twelve was called "mixed evenly over the run's languages";
    `--requests 0` was refused."""
    assert parse_mix("eng_Latn=1e308,hin_Deva=1e308", LANGS) == parse_mix("eng_Latn=1,hin_Deva=1",
                                                                          LANGS)
    even = Workload(1e6, parse_mix("eng_Latn=1,hin_Deva=1", LANGS), "a")
    assert "50% English, 50% Hindi" in even.words("eng_Latn", LANGS)
    assert "mixed evenly" in Workload(1e6, parse_mix(None, LANGS), "a").words("eng_Latn", LANGS)
    assert parse_amount("0", "--requests", zero=True) == 0
