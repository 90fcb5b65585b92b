"""What is kept of production tokenizers between runs (`analyzer.external.kept`): a kept file
that is not whole, its header included, or a kept document of another shape, is worked out
again, never used (found attacking issue 69: an engine file whose header was changed gave
wrong counts, a scripts document {"Latin": "many"} was stored by a run and broke its report).
"""

from __future__ import annotations

import json

import pytest

from analyzer.errors import Invalid
from analyzer.external import kept, kept_engines
from helpers import resolve_or_skip


@pytest.fixture
def kept_here(tmp_path, monkeypatch):
    monkeypatch.setenv("ANALYZER_KEPT", str(tmp_path / "kept"))
    return tmp_path / "kept"


def test_a_kept_document_of_another_shape_is_worked_out_again(kept_here):
    path = kept.kept_path("scripts", "x.json")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"Latin": "many"}))
    valid = lambda found: all(type(n) is int for n in found.values())  # noqa: E731
    assert kept.kept_json("scripts", "x.json", lambda: {"Latin": 3}, valid) == {"Latin": 3}
    assert json.loads(path.read_text()) == {"Latin": 3}  # kept right for next time
    path.write_text("[]")
    assert kept.kept_json("scripts", "x.json", lambda: {"Latin": 4}, valid) == {"Latin": 4}


def test_a_kept_folder_given_with_a_tilde_is_in_the_home_folder(tmp_path, monkeypatch):
    # ANALYZER_KEPT='~/kept' (quoted, or in a unit file: no shell expanded it) was taken as a
    # folder named "~" in the working folder (found attacking issue 69)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANALYZER_KEPT", "~/kept")
    assert kept.kept_dir() == tmp_path / "home" / "kept"
    monkeypatch.setenv("ANALYZER_KEPT", "~nosuchuser/kept")  # was an internal error, exit 70
    with pytest.raises(Invalid, match=r"ANALYZER_KEPT=~nosuchuser/kept: .*'nosuchuser'"):
        kept.kept_dir()


@pytest.mark.slow
def test_an_engine_file_whose_header_was_changed_is_made_again(kept_here):
    from analyzer.external import loaded

    loaded.forget()  # built afresh in this process, so kept here
    tokenizer = resolve_or_skip("cl100k_base")
    if tokenizer.counter is None:
        pytest.skip("the engine does not count cl100k_base here")
    texts = ["Hello, world!", "Ünïcödé and 数字 123"]
    counts = tokenizer.measure(texts)[0]
    [path] = (kept_here / "engines").glob("*.engine")
    digest, library, version, _ = path.stem.split("-")
    found = kept_engines.load(digest, f"{library} {version}")
    assert found is not None
    sealed, _, rest = path.read_bytes().partition(b"\n")
    head, _, body = rest.partition(b"\n")
    about = json.loads(head)
    about["size"] += 1  # a header changed, its body whole
    path.write_bytes(sealed + b"\n" + json.dumps(about).encode() + b"\n" + body)
    assert kept_engines.load(digest, f"{library} {version}") is None
    loaded.forget()
    assert resolve_or_skip("cl100k_base").measure(texts)[0] == counts
    assert kept_engines.load(digest, f"{library} {version}") == found  # made again, kept
