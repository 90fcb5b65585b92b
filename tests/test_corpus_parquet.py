"""Parquet as an ingest format (wide: a column per language; long: a language column, an id
and a text), FLORES+'s layout (a file per language and split, aligned by id), and FLORES+ by
name from the Hugging Face hub (here from a local folder standing in for the hub's cache:
tests never download). Each reads as the same units and texts as a hand-made folder."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analyzer.corpus import CorpusError, read_corpus
from helpers import cli_output, dump, invoke

TEXTS = {"eng_Latn": ["One.", "Two.", "Three."], "fra_Latn": ["Un.", "Deux.", "Trois."]}


def hand_made(root, columns=TEXTS):
    root.mkdir()
    for lang, lines in columns.items():
        (root / f"{lang}.txt").write_text("\n".join(lines) + "\n")
    return read_corpus(root)


def test_a_wide_table_reads_as_a_folder(tmp_path):
    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], **TEXTS}), path, row_group_size=2)
    corpus = read_corpus(path)
    assert corpus.format == "parquet"
    assert corpus.texts == hand_made(tmp_path / "folder").texts
    assert corpus.unit_ids == ["a", "b", "c"]


def test_a_long_table_is_pivoted_by_id_in_first_seen_order(tmp_path):
    rows = [(unit, lang, TEXTS[lang][i]) for lang in reversed(list(TEXTS))
            for i, unit in enumerate([7, 3, 5])]
    path = tmp_path / "long.parquet"
    pq.write_table(pa.table({"id": [r[0] for r in rows], "lang": [r[1] for r in rows],
                             "text": [r[2] for r in rows]}), path)
    corpus = read_corpus(path)
    assert corpus.texts == hand_made(tmp_path / "folder").texts
    assert corpus.unit_ids == ["7", "3", "5"]


@pytest.mark.parametrize("table, said", [
    ({"eng_Latn": ["a", None], "fra_Latn": ["b", "c"]}, "row 2: eng_Latn is missing (null), not text"),
    ({"eng_Latn": ["a", "b"], "fra_Latn": [1, 2]}, "column 'fra_Latn' holds integer, not text"),
    ({"id": [1, 1, 2], "lang": ["eng_Latn", "fra_Latn", "eng_Latn"], "text": ["a", "b", "c"]},
     "fra_Latn has 1 units of 2; it has no row for unit 2"),
    ({"id": [1, 1], "lang": ["eng_Latn", "eng_Latn"], "text": ["a", "b"]},
     "row 2 repeats eng_Latn of unit 1"),
    ({"lang": ["eng_Latn"], "text": ["a"]}, "needs an 'id' column"),
])
def test_a_bad_table_is_refused_naming_the_file_and_row(tmp_path, table, said):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table(table), path)
    with pytest.raises(CorpusError) as error:
        read_corpus(path)
    assert said in str(error.value) and str(path) in str(error.value)


def test_a_damaged_parquet_file_is_refused_and_nothing_is_stored(tmp_path, db):
    path = tmp_path / "broken.parquet"
    pq.write_table(pa.table(TEXTS), path)
    path.write_bytes(path.read_bytes()[:40] + b"\0" * 20 + path.read_bytes()[60:])
    before = dump(db)
    result = invoke(db, "ingest", path)
    assert result.exit_code == 1 and str(path) in result.output
    assert dump(db) == before


def flores_plus(root, suffix=".parquet", ids=(0, 1, 2), devtest_ids=(0, 1)):
    """FLORES+'s layout: <split>/<lang>.parquet, each row id, iso_639_3, iso_15924, text; the
    rows of a file in an order of their own (alignment is by id)."""
    for split, chosen in (("dev", ids), ("devtest", devtest_ids)):
        (root / split).mkdir(parents=True)
        for lang, lines in TEXTS.items():
            rows = [{"id": i, "iso_639_3": lang[:3], "iso_15924": lang[4:], "glottocode": "x",
                     "text": f"{split} {lines[i]}"} for i in chosen]
            rows = rows[::-1] if lang == "fra_Latn" else rows
            path = root / split / f"{lang}{suffix}"
            if suffix == ".parquet":
                pq.write_table(pa.Table.from_pylist(rows), path)
            else:
                path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return root


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_flores_plus_is_recognised_and_aligned_by_id(tmp_path, suffix):
    folder = flores_plus(tmp_path / "flores_plus", suffix)
    corpus = read_corpus(folder, split="dev+devtest")
    assert corpus.format == "flores_plus"
    assert corpus.unit_ids == ["dev:0", "dev:1", "dev:2", "devtest:0", "devtest:1"]
    expected = {lang: [f"dev {t}" for t in lines] + [f"devtest {t}" for t in lines[:2]]
                for lang, lines in TEXTS.items()}
    assert corpus.texts == hand_made(tmp_path / "folder", expected).texts
    assert read_corpus(folder).unit_ids == ["devtest:0", "devtest:1"]  # devtest by default


def test_flores_plus_with_a_language_missing_an_id_is_refused(tmp_path):
    folder = flores_plus(tmp_path / "flores_plus")
    rows = pq.read_table(folder / "dev" / "fra_Latn.parquet").to_pylist()[:-1]
    pq.write_table(pa.Table.from_pylist(rows), folder / "dev" / "fra_Latn.parquet")
    with pytest.raises(CorpusError, match="have different ids"):
        read_corpus(folder, split="dev")


def test_hub_flores_plus_is_read_from_the_hubs_cache(tmp_path, monkeypatch):
    import huggingface_hub

    folder = flores_plus(tmp_path / "cache" / "snapshots" / "abc123")
    asked = {}

    def snapshot_download(repo, **options):
        asked.update(repo=repo, **options)
        return str(folder)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    db = tmp_path / "hub.db"
    out = cli_output(db, "ingest", "hf:openlanguagedata/flores_plus", "--split", "dev")
    assert "Stored corpus 'flores_plus'" in out.replace("\n", " ") or "flores_plus" in out
    assert asked["repo"] == "openlanguagedata/flores_plus"
    assert asked["repo_type"] == "dataset" and asked["allow_patterns"] == ["dev/*"]
    listed = json.loads(cli_output(db, "corpora", "--json"))
    assert listed[0]["name"] == "flores_plus"
    assert "revision abc123" in listed[0]["source"]


@pytest.mark.parametrize("error, said", [
    ("gated", "is gated: accept its terms at https://huggingface.co/datasets/openlanguagedata/"
              "flores_plus"),
    ("offline", "not in the Hugging Face cache and downloads are off"),
])
def test_hub_refusals_say_what_to_do_and_store_nothing(tmp_path, monkeypatch, db, error, said):
    import huggingface_hub
    from huggingface_hub.utils import GatedRepoError, LocalEntryNotFoundError

    def snapshot_download(repo, **options):
        # Made without their constructors, whose arguments differ between versions of the hub.
        refusal = (GatedRepoError if error == "gated" else LocalEntryNotFoundError).__new__(
            GatedRepoError if error == "gated" else LocalEntryNotFoundError)
        Exception.__init__(refusal, "403 Forbidden" if error == "gated" else "not cached")
        raise refusal

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    before = dump(db)
    result = invoke(db, "ingest", "hf:openlanguagedata/flores_plus")
    assert result.exit_code == 1
    assert said in " ".join(result.output.split()).replace("│ ", "")
    assert dump(db) == before


@pytest.mark.parametrize("spec, said", [
    ("hf:../..", "'../..' is not a Hugging Face repository"),
    ("hf:openlanguagedata/flores_plus@..", "'..' is not a revision"),
])
def test_a_hub_name_that_is_no_repository_is_refused_before_the_hub(db, monkeypatch, spec, said):
    import huggingface_hub

    def snapshot_download(repo, **options):
        raise AssertionError("the hub must not be asked")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    before = dump(db)
    result = invoke(db, "ingest", spec)
    assert result.exit_code == 1 and said in " ".join(result.output.split())
    assert dump(db) == before


class FakeHub:
    """The two calls `ingest hf:` makes online (the listing, then each file), answered from a
    FLORES+ folder, or with `failure` raised by the listing."""

    def __init__(self, folder, failure: Exception | None = None):
        self.folder, self.failure = folder, failure
        self.asked: dict = {}
        self.fetched: list[str] = []

    def install(self, monkeypatch, cached=None):
        import huggingface_hub

        hub = self

        class Api:
            def dataset_info(self, repo, **options):
                hub.asked.update(repo=repo, **options)
                if hub.failure is not None:
                    raise hub.failure
                files = sorted(str(p.relative_to(hub.folder)) for p in hub.folder.rglob("*.parquet"))
                return type("Info", (), {"sha": "c0ffee", "siblings": [
                    type("Sibling", (), {"rfilename": name}) for name in files]})

        def hf_hub_download(repo, name, **options):
            assert options["revision"] == "c0ffee" and options["etag_timeout"] == 10.0
            hub.fetched.append(name)
            return str(hub.folder / name)

        def snapshot_download(repo, **options):  # the cache, read with no network
            assert options["local_files_only"]
            if cached is None:
                from huggingface_hub.utils import LocalEntryNotFoundError
                raise LocalEntryNotFoundError("not cached")
            return str(cached)

        monkeypatch.delenv("ANALYZER_OFFLINE", raising=False)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.delenv("HF_HUB_ETAG_TIMEOUT", raising=False)
        monkeypatch.setattr(huggingface_hub, "HfApi", Api)
        monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
        monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
        return self


def test_online_the_split_s_files_are_fetched_with_bounded_waits(tmp_path, monkeypatch):
    """Issue 50, item 19: the listing is asked with a timeout (snapshot_download asked with
    none), then only the split's files are fetched, at the listed commit."""
    hub = FakeHub(flores_plus(tmp_path / "snapshots" / "c0ffee")).install(monkeypatch)
    db = tmp_path / "hub.db"
    cli_output(db, "ingest", "hf:openlanguagedata/flores_plus", "--split", "dev")
    assert hub.asked["timeout"] == 10.0
    assert hub.fetched and all(name.startswith("dev/") for name in hub.fetched)
    assert "revision c0ffee" in json.loads(cli_output(db, "corpora", "--json"))[0]["source"]


def test_a_hub_that_cannot_be_reached_is_read_from_the_cache_when_it_has_the_split(tmp_path,
                                                                                    monkeypatch):
    cached = flores_plus(tmp_path / "snapshots" / "abc123")
    FakeHub(cached, ConnectionError("connection refused")).install(monkeypatch, cached=cached)
    out = cli_output(tmp_path / "hub.db", "ingest", "hf:openlanguagedata/flores_plus")
    assert "flores_plus" in out


@pytest.mark.parametrize("failure, said", [
    (ConnectionError("connection refused"), "the Hugging Face hub at https://huggingface.co could "
     "not be reached (ConnectionError: connection refused), and it is not in the Hugging Face "
     "cache; nothing was stored"),
    (TimeoutError("read timed out"), "did not answer within 10 s (HF_HUB_ETAG_TIMEOUT sets the "
     "wait)"),
    (RuntimeError("500 Server Error"), "answered with an error (RuntimeError: 500 Server Error)"),
])
def test_a_hub_failure_not_in_the_cache_is_said_and_stores_nothing(tmp_path, monkeypatch, db,
                                                                   failure, said):
    FakeHub(tmp_path, failure).install(monkeypatch)
    before = dump(db)
    result = invoke(db, "ingest", "hf:openlanguagedata/flores_plus")
    assert result.exit_code == 1 and said in " ".join(result.output.split()), result.output
    assert dump(db) == before
