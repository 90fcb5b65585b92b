"""`analyzer results RUN --out DIR`: a run's production tokenizers as a data file a docs site
keeps (every premium with its interval, each tokenizer's framing and files' SHA-256, the priced
models, the corpus's digest, the analyzer's version), a sortable page and the interactive
report; refused for a run with no production tokenizer."""

from __future__ import annotations

import json

import pytest

from analyzer import __version__
from helpers import HOSTILE_CODE, cli_output, hostile_document, invoke, page_data_of, resolve_or_skip


@pytest.mark.slow
def test_the_data_file_has_every_premium_and_what_makes_it_checkable(db, tmp_path):
    tokenizer = resolve_or_skip("cl100k_base")
    resolve_or_skip("gpt2")
    cli_output(db, "run", "--tokenizer", "cl100k_base", "--tokenizer", "gpt2", "--no-report")
    out = tmp_path / "results"
    printed = cli_output(db, "results", "1", "--out", out)
    assert "results.json" in printed and "index.html" in printed and "report.html" in printed
    document = json.loads((out / "results.json").read_text())
    assert document["analyzer"] == __version__ and document["pivot"] == "eng_Latn"
    corpus = json.loads(cli_output(db, "corpora", "--json"))[0]
    assert document["corpus"]["content_sha256"] == corpus["content_hash"]
    (cl100k,) = [t for t in document["tokenizers"] if t["name"] == "cl100k_base"]
    assert cl100k["sha256"] and all(digest in tokenizer.source for digest in cl100k["sha256"])
    assert cl100k["framing"] is not None
    records = {(r["vocab"], r["lang"]): r
               for r in json.loads(cli_output(db, "export", "1"))["records"]}
    assert len(document["rows"]) == len(records) == 6
    for row in document["rows"]:
        record = records[(row["tokenizer"], row["lang"])]
        assert row["tokens"] == record["tokens"]
        assert row["premium"] == round(record["premium"], 6)
        assert row["premium_ci_low"] <= row["premium"] <= row["premium_ci_high"]
    assert {m["tokenizer"] for m in document["models"]} <= {"cl100k_base", "gpt2"}
    assert document["models"] and all(m["input_price"] > 0 for m in document["models"])
    page = (out / "index.html").read_text()
    assert "<script src" not in page and "http" not in page.split("<script>")[1]
    assert (out / "report.html").stat().st_size > 1_000_000  # plotly.js inlined: works alone


def test_a_run_without_production_tokenizers_is_refused(db, tmp_path):
    cli_output(db, "run", "--vocab", "300", "--jobs", "1", "--no-report")
    result = invoke(db, "results", "1", "--out", tmp_path / "results")
    assert result.exit_code == 1
    assert "measured no production tokenizer" in result.output
    assert not (tmp_path / "results" / "results.json").exists()


@pytest.mark.slow
def test_what_one_publishes_names_no_folder_of_this_machine(db, tmp_path):
    """A results folder goes on a docs site or into a paper's supplement, and a report is sent
    around: no file that `results`, `report` or `run` writes names the tokenizers' files or the
    corpus by where they lay here (nor the home or the temporary folder), only by name,
    package and SHA-256; `--full-paths` keeps them for one's own machine."""
    import re
    import tempfile
    from pathlib import Path

    tokenizer = resolve_or_skip("cl100k_base")
    cli_output(db, "run", "--tokenizer", "cl100k_base", "--out", tmp_path / "by-run")
    corpus = json.loads(cli_output(db, "corpora", "--json"))[0]
    folders = {path.rsplit("/", 1)[0]
               for path in re.findall(r"(?<![\w:/])/[^\s:;()]+", f"{tokenizer.source} {corpus['source']}")}
    folders |= {str(tmp_path), str(Path.home()), tempfile.gettempdir()}
    assert any(tokenizer.source.count(folder) for folder in folders)  # there is one to leave out
    out = tmp_path / "results"
    cli_output(db, "results", "1", "--out", out)
    cli_output(db, "report", "1", "--out", tmp_path / "report")
    written = [path for folder in ("results", "report", "by-run")
               for path in (tmp_path / folder).iterdir() if not path.name.startswith("plotly-")]
    assert len(written) >= 7
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert not [folder for folder in folders if folder in text], path
    (cl100k,) = json.loads((out / "results.json").read_text())["tokenizers"]
    assert cl100k["sha256"] and all(digest in cl100k["source"] for digest in cl100k["sha256"])
    local = tmp_path / "local"
    cli_output(db, "report", "1", "--out", local, "--full-paths")
    assert any(folder in (local / "run-1.html").read_text() for folder in folders)


def test_the_committed_results_name_no_folder_of_the_machine_that_wrote_them():
    """The results committed under docs/results were written with folders of their machine in
    them (a virtual environment's site-packages): a reader has other folders."""
    import re
    from pathlib import Path

    machine = re.compile(r"(?<![\w:/.])/(?:home|root|Users|tmp|work|opt|usr|var|mnt|srv|private)"
                         r"/[\w.@+-]+/|site-packages|dist-packages")
    folder = Path(__file__).parents[1] / "docs" / "results"
    published = sorted(folder.rglob("*.json")) + sorted(folder.rglob("*.html"))
    assert published
    for path in published:
        found = machine.findall(path.read_text(encoding="utf-8"))
        assert not found, (path.relative_to(folder), sorted(set(found))[:5])


@pytest.mark.slow
def test_a_run_of_one_language_has_a_results_page(db, tmp_path):
    """Nothing to compare, but the page is made (it crashed on an empty summary by script,
    after the report and the data file were written)."""
    resolve_or_skip("cl100k_base")
    cli_output(db, "run", "--langs", "eng_Latn", "--tokenizer", "cl100k_base", "--no-report")
    out = tmp_path / "one"
    cli_output(db, "results", "1", "--out", out)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "One language only: nothing to compare." in page


def test_a_language_code_of_markup_stays_inside_the_page_data():
    """What the results page's script needs (the pivot, the names, the colour scale) is one
    JSON block, never spliced into the script: a name holding </script> or <!-- cannot end
    the block, nor open a comment that would swallow the scripts after it."""
    import re

    from analyzer.report.answer import ABOVE, BELOW, HIGH, LOW
    from analyzer.report.files import static_text
    from analyzer.report.results import results_page

    html = results_page(hostile_document())
    data = page_data_of(html)
    assert data["pivot"] == "eng_Latn"
    assert data["names"] == {"eng_Latn": "English", HOSTILE_CODE: HOSTILE_CODE}
    assert data["scale"] == json.loads(json.dumps({"low": LOW, "high": HIGH, "above": ABOVE,
                                                   "below": BELOW}))
    block = html.split('id="page-data">')[1].split("</script>")[0]
    assert "<" not in block and ">" not in block
    opened = re.findall(r"<script[^>]*>", html)
    assert opened == ['<script type="application/json" id="page-data">'] + ["<script>"] * 5
    assert re.findall(r"<script>(.*?)</script>", html, re.S) == [
        static_text(name) for name in ("page-data.js", "tables.js", "reference.js", "results.js",
                                       "bill.js")]
