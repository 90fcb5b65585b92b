"""Any reference language, in every face (issue 71): `show --reference`, its JSON, `export`,
the report and the service measure every language against one the user picks, the same
premiums a reader would compute from the run's own counts; the verdicts do not change."""

from __future__ import annotations

import json

import pytest

from helpers import cli_output, invoke


@pytest.fixture
def ran(db):
    """The tiny corpus's run: a shared vocabulary and its languages' own."""
    cli_output(db, "run", "--vocab", "300", "--jobs", "1", "--per-language", "--no-report")
    return db


def premiums(document: dict, vocab: str = "shared") -> dict[str, float]:
    return {row["lang"]: row["premium"] for row in document["records"] if row["vocab"] == vocab}


def test_show_against_another_reference_is_the_run_s_counts_over_that_language_s(ran):
    own = json.loads(cli_output(ran, "show", "1", "--json"))
    other = json.loads(cli_output(ran, "show", "1", "--json", "--reference", "kor_Hang"))
    assert own["pivot"] == other["pivot"] == own["reference"] == "eng_Latn"
    assert other["reference"] == "kor_Hang"
    tokens = {row["lang"]: row["tokens"] for row in own["records"] if row["vocab"] == "shared"}
    against = premiums(other)
    assert against["kor_Hang"] == 1.0
    for lang, count in tokens.items():
        assert against[lang] == pytest.approx(count / tokens["kor_Hang"], rel=1e-12)
    for row in other["records"]:  # every interval holds its premium
        if row["premium_ci_low"] is not None:
            assert row["premium_ci_low"] <= row["premium"] <= row["premium_ci_high"]
    for mine, theirs in zip(own["verdicts"], other["verdicts"], strict=True):
        assert theirs == {**mine, "gini": pytest.approx(mine["gini"], rel=1e-12)}  # any language
    printed = cli_output(ran, "show", "1", "--reference", "kor_Hang")
    assert "tokens vs Korean" in printed


def test_export_the_report_and_the_service_take_the_reference_too(ran, tmp_path):
    from fastapi.testclient import TestClient

    from analyzer.serve import create_app

    exported = json.loads(cli_output(ran, "export", "1", "--reference", "rus_Cyrl"))
    assert exported["pivot"] == "eng_Latn" and exported["reference"] == "rus_Cyrl"
    assert premiums(exported)["rus_Cyrl"] == 1.0
    with TestClient(create_app(ran), base_url="http://127.0.0.1") as client:
        served = client.get("/api/runs/1", params={"reference": "rus_Cyrl"}).json()
        plain = client.get("/api/runs/1").json()
        missing = client.get("/api/runs/1", params={"reference": "rus_cyrl"})
    assert premiums(served) == premiums(exported) and plain["reference"] == "eng_Latn"
    assert missing.status_code == 404 and "did you mean rus_Cyrl" in missing.text
    out = tmp_path / "reports"
    printed = cli_output(ran, "report", "1", "--reference", "rus_Cyrl", "--out", out)
    assert "run-1-vs-rus_Cyrl.html" in printed
    page = (out / "run-1-vs-rus_Cyrl.html").read_text()
    assert "the tokens of Russian" in page and not (out / "run-1.html").exists()


def test_a_reference_the_run_does_not_have_is_refused_with_its_languages(ran):
    result = invoke(ran, "show", "1", "--reference", "kor_hang")
    assert result.exit_code == 1
    assert "run 1 has no language 'kor_hang' to measure against" in result.output
    assert "eng_Latn, kor_Hang, rus_Cyrl" in result.output
    assert "did you mean kor_Hang" in result.output
    result = invoke(ran, "export", "1", "--reference", "fra_Latn", "--tokenizer", "shared",
                    "--out", "x")
    assert result.exit_code != 0 and "--reference and --bill are for the run's export" in result.output
