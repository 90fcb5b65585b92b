"""The verdicts (`analyzer.metrics.verdicts`): one definition of the cheapest, the fairest and
the frontier, which every face prints (issue 71)."""

from __future__ import annotations

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.metrics import gini, pareto_frontier
from analyzer.metrics.verdicts import verdicts

TOKENS = st.integers(1, 10**9)
PREMIUMS = st.lists(st.floats(0.2, 20.0), min_size=2, max_size=8)


def summaries_of(tokens: list[int], ginis: list[float], sizes: list[int] | None = None
                 ) -> pd.DataFrame:
    """Summaries of production tokenizers t0, t1, ... (one size each, unless `sizes`)."""
    n = len(tokens)
    frame = pd.DataFrame({"vocab": [f"t{k}" for k in range(n)], "pretokenizer": [None] * n,
                          "kind": ["production"] * n, "size": sizes or [1000] * n,
                          "tokens": tokens, "gini": ginis})
    frame["frontier"] = pareto_frontier(list(frame["tokens"].astype(float)), list(frame["gini"]))
    return frame


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a loaded machine
@given(st.lists(st.tuples(TOKENS, st.floats(0.0, 1.0)), min_size=2, max_size=12))
def test_the_cheapest_has_fewest_tokens_and_the_fairest_the_lowest_gini(pairs):
    tokens, ginis = [t for t, _ in pairs], [g for _, g in pairs]
    found = verdicts(summaries_of(tokens, ginis), ["words"])
    assert found.cheapest is not None and found.fairest is not None
    assert found.cheapest.tokens == min(tokens) and found.fairest.gini - min(ginis) < 1e-12
    assert [c.tokens for c in found.candidates] == sorted(tokens)
    on = {f"t{k}" for k, flag in enumerate(pareto_frontier([float(t) for t in tokens], ginis))
          if flag}
    assert {c.name for c in found.frontier} == on
    assert found.cheapest in found.frontier or any(c.tokens == found.cheapest.tokens
                                                   for c in found.frontier)
    rows = found.rows()
    assert rows["cheapest"].sum() == 1 and rows["fairest"].sum() == 1


@given(PREMIUMS, st.integers(0, 7))
def test_the_fairness_measure_does_not_change_with_the_reference_language(tokens, reference):
    """The Gini of premiums against any language is the Gini of the counts themselves: the
    verdict is the same whichever reference a face shows."""
    pivot = tokens[reference % len(tokens)]
    assert abs(gini([t / pivot for t in tokens]) - gini(tokens)) < 1e-9


def test_a_trained_vocabulary_is_a_candidate_at_its_largest_size_only():
    frame = summaries_of([500, 400, 450], [0.1, 0.2, 0.05], sizes=[256, 512, 100_000])
    frame.loc[:1, "vocab"] = "shared"
    frame.loc[:1, "kind"] = "shared"
    frame.loc[:1, "pretokenizer"] = "words"
    found = verdicts(frame, ["words"])
    assert [c.name for c in found.candidates] == ["shared 512", "t2"]
    assert found.cheapest.name == "shared 512" and found.fairest.name == "t2"
    said = found.sentences()
    assert said[0].startswith("The cheapest for these languages is shared 512: 400 tokens for "
                              "all of them, 11.1% fewer than t2.")
    assert said[1] == ("The fairest is t2: the Gini of its premiums is 0.050 (0: every "
                       "language pays the same).")


def test_one_candidate_has_no_verdict():
    found = verdicts(summaries_of([10], [0.0]), ["words"])
    assert found.cheapest is None and found.fairest is None and found.sentences() == []
    assert verdicts(summaries_of([], []), ["words"]).candidates == ()


def said_verdicts(text: str) -> tuple[str, str]:
    """(cheapest, fairest) as a face's words name them, wherever its lines wrap."""
    import re

    words = " ".join(text.split())
    cheapest = re.search(r"The cheapest for these languages is (.+?): [\d,]+ tokens", words)
    fairest = re.search(r"The fairest is (.+?): the Gini", words)
    assert cheapest and fairest, words[:2000]
    return cheapest.group(1), fairest.group(1)


def flagged(rows: list[dict]) -> tuple[str, str]:
    """(cheapest, fairest) as a document's verdict rows flag them."""
    (cheapest,) = [row["name"] for row in rows if row["cheapest"]]
    (fairest,) = [row["name"] for row in rows if row["fairest"]]
    return cheapest, fairest


def test_every_face_of_a_run_gives_the_same_verdicts(db, tmp_path):
    """Issue 71: the terminal, `show --json`, `export`, the report, the results page and the
    service name one cheapest and one fairest tokenizer for one run (the report used to name
    the fairest by the median premium, the terminal by the Gini)."""
    import json
    import re

    from fastapi.testclient import TestClient

    from analyzer.serve import create_app
    from helpers import cli_output, resolve_or_skip

    for name in ("cl100k_base", "gpt2"):
        resolve_or_skip(name)
    out = tmp_path / "reports"
    cli_output(db, "run", "--vocab", "300", "--jobs", "1", "-t", "cl100k_base", "-t", "gpt2",
               "--out", out)
    shown = cli_output(db, "show", "1")
    document = json.loads(cli_output(db, "show", "1", "--json"))
    exported = json.loads(cli_output(db, "export", "1"))
    report = next(out.glob("*.html")).read_text()
    results = tmp_path / "results"
    cli_output(db, "results", "1", "--out", results)
    published = json.loads((results / "results.json").read_text())
    page = (results / "index.html").read_text()
    with TestClient(create_app(db), base_url="http://127.0.0.1") as client:
        served = client.get("/api/runs/1").json()

    answer = flagged(document["verdicts"])
    assert len(document["verdicts"]) == 3  # shared 300, cl100k_base, gpt2
    assert flagged(exported["verdicts"]) == flagged(served["verdicts"]) == answer
    assert flagged(published["verdicts"]["candidates"]) == answer
    lead = " ".join(re.findall(r"<p class='lead[^']*'>(.*?)</p>", report))
    for text in (shown, lead, " ".join(published["verdicts"]["said"]), page):
        assert said_verdicts(text) == answer
    summaries = {(row["vocab"], row["size"]): row for row in document["summaries"]}
    cheapest = min(document["verdicts"], key=lambda row: row["tokens"])
    assert cheapest["name"] == answer[0]
    fairest = min(document["verdicts"], key=lambda row: row["gini"])
    assert fairest["name"] == answer[1]
    assert summaries[(fairest["vocab"], fairest["size"])]["gini"] == fairest["gini"]


def test_a_tie_is_said_as_a_tie():
    """Found by the attack pass: two tokenizers of the same count were "0.0% fewer" apart."""
    found = verdicts(summaries_of([500, 500, 700], [0.1, 0.1, 0.3]), ["words"])
    said = found.sentences()
    assert said[0] == ("The cheapest for these languages is t0 (tied with t1): 500 tokens for "
                       "all of them, 28.6% fewer than t2.")
    assert said[1].startswith("The fairest is t0 (tied with t1): ")
