"""Training sources by name on the Hugging Face hub (issue 54, item 6): `sources add NAME
hf:ORG/DATASET` fetches, at one commit, only the shards a language's byte budget needs, into the
hub's cache, and registers them as a local source of Parquet files; each refusal says what to
do and leaves the database as it was. The hub is a fake serving Parquet files this test writes
(its listing, its downloads into a cache laid out as huggingface_hub lays it, its errors): no
test downloads."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from helpers import dump, invoke

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("huggingface_hub")

COMMIT = "c0ffee" + "0" * 34
FINEWEB = "HuggingFaceFW/fineweb-2"
CULTURAX = "uonlp/CulturaX"
WORDS = {"rus_Cyrl": "один два три четыре", "fra_Latn": "un deux trois quatre",
         "deu_Latn": "eins zwei drei vier"}


def write_shard(path: Path, lang: str, shard: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    texts = [f"{WORDS[lang]} {shard} {i}" for i in range(40)]
    pq.write_table(pa.table({"text": texts, "id": [f"{shard}-{i}" for i in range(40)]}), path)


def fineweb(root: Path) -> Path:
    """FineWeb-2's layout: data/<config>/<split>/*.parquet, three shards a language's train."""
    for lang in WORDS:
        for shard in range(3):
            write_shard(root / "data" / lang / "train" / f"000_{shard:05d}.parquet", lang, shard)
        write_shard(root / "data" / lang / "test" / "000_00000.parquet", lang, 9)
    write_shard(root / "data" / "rus_Cyrl_removed" / "train" / "000_00000.parquet", "rus_Cyrl", 7)
    (root / "README.md").write_text("# FineWeb-2\n")
    return root


def culturax(root: Path) -> Path:
    """CulturaX's layout: <lang>/<lang>_part_NNNNN.parquet, two-letter codes, no split folder."""
    for lang, short in (("rus_Cyrl", "ru"), ("fra_Latn", "fr")):
        for shard in range(2):
            write_shard(root / short / f"{short}_part_{shard:05d}.parquet", lang, shard)
    return root


def made(name: str, error: type) -> Exception:
    """One of the hub's errors, made without its constructor (whose arguments differ between
    versions of huggingface_hub)."""
    refusal = error.__new__(error)
    Exception.__init__(refusal, name)
    return refusal


class FakeHub:
    """The calls a hub source makes online (the listing with sizes, then each file), answered
    from a folder; downloads land in `HF_HUB_CACHE` laid out as huggingface_hub lays it (blobs,
    snapshots/<commit> linking to them, refs/main), so that offline the real
    `snapshot_download(local_files_only=True)` finds them."""

    def __init__(self, repo: str, folder: Path, failure: str | None = None):
        self.repo, self.folder, self.failure = repo, folder, failure
        self.asked: list[dict] = []
        self.fetched: list[str] = []

    def install(self, monkeypatch) -> FakeHub:
        import huggingface_hub
        from huggingface_hub.utils import (
            GatedRepoError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )

        hub = self

        class Api:
            def dataset_info(self, repo, **options):
                hub.asked.append({"repo": repo, **options})
                if hub.failure == "gated":
                    raise made("403 Forbidden", GatedRepoError)
                if hub.failure == "network":
                    raise ConnectionError("connection refused")
                if repo != hub.repo:
                    raise made("404 Not Found", RepositoryNotFoundError)
                if options.get("revision") not in (None, "main", COMMIT):
                    raise made("404 Not Found", RevisionNotFoundError)
                assert options["files_metadata"] and options["timeout"] == 10.0
                files = sorted(p for p in hub.folder.rglob("*") if p.is_file())
                return type("Info", (), {"sha": COMMIT, "siblings": [
                    type("Sibling", (), {"rfilename": str(p.relative_to(hub.folder)),
                                         "size": p.stat().st_size}) for p in files]})

        def hf_hub_download(repo, name, **options):
            assert options["revision"] == COMMIT and options["repo_type"] == "dataset"
            hub.fetched.append(name)
            storage = Path(options["cache_dir"]) / f"datasets--{repo.replace('/', '--')}"
            link = storage / "snapshots" / COMMIT / name
            if link.exists():  # as the hub's library does: a cached file is not fetched again
                return str(link)
            blob = storage / "blobs" / f"blob{len(hub.fetched)}"
            blob.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(hub.folder / name, blob)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(blob, link.parent))
            (storage / "refs").mkdir(exist_ok=True)
            (storage / "refs" / "main").write_text(COMMIT)
            return str(link)

        monkeypatch.delenv("ANALYZER_OFFLINE", raising=False)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.delenv("HF_HUB_ETAG_TIMEOUT", raising=False)
        monkeypatch.setattr(huggingface_hub, "HfApi", Api)
        monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
        return self


def said(result) -> str:
    return " ".join(result.output.replace("│", " ").split())


def test_the_budget_fetches_only_the_shards_it_needs_and_the_revision_is_recorded(
        tmp_path, monkeypatch):
    hub = FakeHub(FINEWEB, fineweb(tmp_path / "remote")).install(monkeypatch)
    shard = (tmp_path / "remote" / "data" / "rus_Cyrl" / "train" / "000_00000.parquet").stat().st_size
    db = tmp_path / "a.db"
    result = invoke(db, "sources", "add", "web", f"hf:{FINEWEB}", "--languages", "rus_Cyrl,fr",
                    "--bytes-per-language", str(shard + 1))
    assert result.exit_code == 0, result.output
    # Two shards a language reach the budget (one falls a byte short): the third is not fetched,
    # nor the test split, nor the other configs.
    assert hub.fetched == [f"data/{lang}/train/000_0000{i}.parquet"
                           for lang in ("rus_Cyrl", "fra_Latn") for i in (0, 1)]
    assert len(hub.asked) == 1 and hub.asked[0]["revision"] is None  # resolved once
    assert f"From hf:{FINEWEB} at revision {COMMIT}" in said(result)
    shown = json.loads(invoke(db, "sources", "show", "web", "--json").stdout)
    assert shown["origin"]["revision"] == COMMIT and shown["origin"]["shards"] == 4
    assert shown["origin"]["budget"] == shard + 1 and shown["origin"]["split"] == "train"
    assert shown["languages"] == ["rus_Cyrl", "fra_Latn"] and shown["document_count"] == 160
    # The files are the cache's snapshot at the commit, named as in the repository.
    assert all(f"/snapshots/{COMMIT}/data/" in item["path"] for item in shown["file_list"])
    assert str(tmp_path / "hf-cache") in shown["file_list"][0]["path"]


@pytest.mark.parametrize("revision", ["", f"@{COMMIT}"])
def test_a_later_add_at_the_recorded_commit_reads_the_same_shards_and_changes_nothing(
        tmp_path, monkeypatch, revision):
    hub = FakeHub(FINEWEB, fineweb(tmp_path / "remote")).install(monkeypatch)
    db = tmp_path / "a.db"
    assert invoke(db, "sources", "add", "web", f"hf:{FINEWEB}", "--languages", "deu").exit_code == 0
    before = dump(db)
    # Named or not, the commit asked is the one recorded: the hub's default branch may have
    # moved since.
    again = invoke(db, "sources", "add", "web", f"hf:{FINEWEB}{revision}", "--languages", "deu")
    assert again.exit_code == 0 and "already registered" in said(again)
    assert ("was fetched at revision" in said(again)) == (revision == "")
    assert hub.asked[-1]["revision"] == COMMIT
    assert len(hub.fetched) == 6  # three shards asked each time, found in the cache the second
    assert dump(db) == before
    # --replace takes the dataset as it is now: its default branch.
    invoke(db, "sources", "add", "web", f"hf:{FINEWEB}", "--languages", "deu", "--replace")
    assert hub.asked[-1]["revision"] is None


def test_a_language_is_its_own_config_and_not_the_text_filtered_out_of_it(tmp_path, monkeypatch):
    hub = FakeHub(FINEWEB, fineweb(tmp_path / "remote")).install(monkeypatch)
    db = tmp_path / "a.db"
    assert invoke(db, "sources", "add", "web", f"hf:{FINEWEB}", "--languages", "ru").exit_code == 0
    assert hub.fetched == [f"data/rus_Cyrl/train/000_0000{i}.parquet" for i in range(3)]
    removed = invoke(db, "sources", "add", "removed", f"hf:{FINEWEB}", "--config",
                     "rus_Cyrl_removed")
    assert removed.exit_code == 0, removed.output
    shown = json.loads(invoke(db, "sources", "show", "removed", "--json").stdout)
    assert shown["languages"] == ["rus_Cyrl"] and shown["files"] == 1


def test_culturax_layout_and_configs_by_name(tmp_path, monkeypatch):
    FakeHub(CULTURAX, culturax(tmp_path / "remote")).install(monkeypatch)
    db = tmp_path / "a.db"
    result = invoke(db, "sources", "add", "cx", f"hf:{CULTURAX}", "--config", "fr,ru")
    assert result.exit_code == 0, result.output
    shown = json.loads(invoke(db, "sources", "show", "cx", "--json").stdout)
    assert shown["languages"] == ["fra_Latn", "rus_Cyrl"] and shown["files"] == 4
    assert shown["origin"]["configs"] == ["fr", "ru"]


def test_offline_the_cache_is_used_and_what_it_lacks_is_said(tmp_path, monkeypatch):
    FakeHub(FINEWEB, fineweb(tmp_path / "remote")).install(monkeypatch)
    db = tmp_path / "a.db"
    assert invoke(db, "sources", "add", "web", f"hf:{FINEWEB}", "--languages", "rus_Cyrl"
                  ).exit_code == 0
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    offline = invoke(db, "sources", "add", "web2", f"hf:{FINEWEB}", "--languages", "rus_Cyrl")
    assert offline.exit_code == 0, offline.output
    assert "downloads are off (HF_HUB_OFFLINE is set): the shards are the Hugging Face cache's, " \
           f"at revision {COMMIT}" in said(offline)
    first, second = (json.loads(invoke(db, "sources", "show", name, "--json").stdout)
                     for name in ("web", "web2"))
    assert first["fingerprint"] == second["fingerprint"]
    before = dump(db)
    lacking = invoke(db, "sources", "add", "web3", f"hf:{FINEWEB}", "--languages", "deu_Latn")
    assert lacking.exit_code == 1
    assert f"hf:{FINEWEB} (revision {COMMIT}, in the cache) has no language deu_Latn" \
        in said(lacking)
    assert dump(db) == before


@pytest.mark.parametrize("lost", ["blob", "link"])
def test_offline_a_shard_missing_from_the_cache_is_refused_by_name(tmp_path, monkeypatch, lost):
    """Issue 68, item 5: offline, `--replace` registered the source with the shards the cache
    still held (2 of 3), without a word, and runs trained on part of the language. A shard
    whose file is gone from the cache (its blob: the snapshot's link dangles; or the link
    itself, known from the source registered under the name) is refused, named."""
    FakeHub(FINEWEB, fineweb(tmp_path / "remote")).install(monkeypatch)
    db = tmp_path / "a.db"
    assert invoke(db, "sources", "add", "web", f"hf:{FINEWEB}", "--languages", "rus_Cyrl"
                  ).exit_code == 0
    snapshot = tmp_path / "hf-cache" / f"datasets--{FINEWEB.replace('/', '--')}" / "snapshots"
    shard = snapshot / COMMIT / "data" / "rus_Cyrl" / "train" / "000_00001.parquet"
    if lost == "blob":
        shard.resolve().unlink()
    else:
        shard.unlink()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = dump(db)
    result = invoke(db, "sources", "add", "web", f"hf:{FINEWEB}", "--languages", "rus_Cyrl",
                    "--replace")
    assert result.exit_code == 1, result.output
    assert "data/rus_Cyrl/train/000_00001.parquet" in said(result)
    assert "nothing was registered" in said(result), said(result)
    assert dump(db) == before
    # A shard beyond the budget is not needed: the cache's others are registered.
    small = invoke(db, "sources", "add", "web2", f"hf:{FINEWEB}", "--languages", "rus_Cyrl",
                   "--bytes-per-language", "1")
    assert small.exit_code == 0, small.output


def test_a_hub_that_cannot_be_reached_is_read_from_the_cache_saying_so(tmp_path, monkeypatch):
    hub = FakeHub(FINEWEB, fineweb(tmp_path / "remote")).install(monkeypatch)
    db = tmp_path / "a.db"
    assert invoke(db, "sources", "add", "web", f"hf:{FINEWEB}", "--languages", "fra").exit_code == 0
    hub.failure = "network"
    again = invoke(db, "sources", "add", "web2", f"hf:{FINEWEB}", "--languages", "fra")
    assert again.exit_code == 0, again.output
    assert "could not be reached (ConnectionError: connection refused): the shards are the " \
           f"Hugging Face cache's, at revision {COMMIT}" in said(again)
    assert len(hub.fetched) == 3  # nothing asked of the hub the second time


@pytest.mark.parametrize("failure, message", [
    ("timeout", f"hf:{FINEWEB}: fetching its shards failed: the Hugging Face hub at "
     "https://huggingface.co did not answer within 10 s (HF_HUB_ETAG_TIMEOUT sets the wait); "
     "the shards fetched stay in the Hugging Face cache, and running the command again fetches "
     "the rest; nothing was registered"),
    # huggingface_hub's word for a connection lost on the way to a file the cache lacks
    ("uncached", f"hf:{FINEWEB}: fetching its shards failed: the Hugging Face hub at "
     "https://huggingface.co could not be reached (LocalEntryNotFoundError: connection lost)"),
    # a gated dataset lists its files to anyone, and refuses them to who has not accepted its terms
    ("gated", f"hf:{FINEWEB} is gated: accept its terms at https://huggingface.co/datasets/"
     f"{FINEWEB} with your account, then give this machine your token"),
])
def test_a_download_that_fails_midway_says_so_and_registers_nothing(tmp_path, monkeypatch, db,
                                                                    failure, message):
    import huggingface_hub
    from huggingface_hub.utils import GatedRepoError, LocalEntryNotFoundError

    hub = FakeHub(FINEWEB, fineweb(tmp_path / "remote")).install(monkeypatch)
    download = huggingface_hub.hf_hub_download
    error = {"timeout": TimeoutError("read timed out"),
             "uncached": made("connection lost", LocalEntryNotFoundError),
             "gated": made("403 Forbidden", GatedRepoError)}[failure]

    def flaky(repo, name, **options):
        if len(hub.fetched) == 2:
            raise error
        return download(repo, name, **options)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", flaky)
    before = dump(db)
    result = invoke(db, "sources", "add", "web", f"hf:{FINEWEB}", "--languages", "rus_Cyrl")
    assert result.exit_code == 1
    assert message in said(result)
    assert dump(db) == before


def test_a_name_taken_by_another_source_is_refused_before_anything_is_fetched(tmp_path,
                                                                             monkeypatch, db):
    hub = FakeHub(FINEWEB, fineweb(tmp_path / "remote")).install(monkeypatch)
    folder = tmp_path / "mono"
    folder.mkdir()
    (folder / "eng_Latn.txt").write_text("one two\n")
    assert invoke(db, "sources", "add", "web", folder).exit_code == 0
    before = dump(db)
    result = invoke(db, "sources", "add", "web", f"hf:{FINEWEB}", "--languages", "rus_Cyrl")
    assert result.exit_code == 1 and "a source named 'web' is already registered" in said(result)
    assert hub.asked == [] and hub.fetched == [] and dump(db) == before
    replaced = invoke(db, "sources", "add", "web", f"hf:{FINEWEB}", "--languages", "rus_Cyrl",
                      "--replace")
    assert replaced.exit_code == 0 and "Replaced source 'web'" in said(replaced)


def test_a_dataset_that_was_never_fetched_offline_says_so(tmp_path, monkeypatch, db):
    FakeHub(FINEWEB, fineweb(tmp_path / "remote")).install(monkeypatch)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = dump(db)
    result = invoke(db, "sources", "add", "web", f"hf:{FINEWEB}", "--languages", "rus_Cyrl")
    assert result.exit_code == 1
    assert f"hf:{FINEWEB}: not in the Hugging Face cache and downloads are off (HF_HUB_OFFLINE " \
           "is set); run once online" in said(result)
    assert dump(db) == before


@pytest.mark.parametrize("spec, args, failure, message", [
    (f"hf:{FINEWEB}", ["--languages", "rus_Cyrl"], "gated",
     f"hf:{FINEWEB} is gated: accept its terms at https://huggingface.co/datasets/{FINEWEB} "
     "with your account, then give this machine your token (hf auth login, or HF_TOKEN)"),
    (f"hf:{FINEWEB}", ["--languages", "rus_Cyrl"], "network",
     f"hf:{FINEWEB}: the Hugging Face hub at https://huggingface.co could not be reached "
     "(ConnectionError: connection refused), and it is not in the Hugging Face cache; nothing "
     "was registered"),
    ("hf:HuggingFaceFW/fineweb-3", ["--languages", "rus_Cyrl"], None,
     "hf:HuggingFaceFW/fineweb-3: the hub has no dataset HuggingFaceFW/fineweb-3"),
    (f"hf:{FINEWEB}@v9", ["--languages", "rus_Cyrl"], None,
     f"hf:{FINEWEB}@v9: the dataset {FINEWEB} has no revision 'v9'"),
    (f"hf:{FINEWEB}", ["--config", "rus_Cyrl_remove"], None,
     f"hf:{FINEWEB} (revision {COMMIT}) has no config 'rus_Cyrl_remove'; did you mean "
     "rus_Cyrl_removed? (its configs: deu_Latn, fra_Latn, rus_Cyrl, rus_Cyrl_removed)"),
    (f"hf:{FINEWEB}", ["--languages", "rus_Latn"], None,
     f"hf:{FINEWEB} (revision {COMMIT}) has no language rus_Latn; did you mean rus_Cyrl? (its "
     "languages: deu_Latn, fra_Latn, rus_Cyrl)"),
    (f"hf:{FINEWEB}", ["--languages", "fra", "--split", "tset"], None,
     f"the config fra_Latn of hf:{FINEWEB} (revision {COMMIT}) has no split 'tset'; did you "
     "mean test? (its splits: test, train)"),
    (f"hf:{FINEWEB}", [], None,
     f"name the languages to fetch from hf:{FINEWEB} (revision {COMMIT}) (--languages, e.g. "
     "deu_Latn) or its configs (--config); it has 4: deu_Latn, fra_Latn, rus_Cyrl, "
     "rus_Cyrl_removed"),
    (f"hf:{FINEWEB}", ["--languages", "xx-nope"], None, "unknown language code 'xx-nope'"),
])
def test_each_failure_says_what_to_do_and_leaves_the_database_as_it_was(
        tmp_path, monkeypatch, db, spec, args, failure, message):
    hub = FakeHub(FINEWEB, fineweb(tmp_path / "remote"), failure).install(monkeypatch)
    before = dump(db)
    result = invoke(db, "sources", "add", "web", spec, *args)
    assert result.exit_code == 1, result.output
    assert message in said(result)
    assert dump(db) == before and hub.fetched == []


def test_hub_options_are_refused_with_local_paths_and_a_hub_source_alone(tmp_path, db):
    folder = tmp_path / "mono"
    folder.mkdir()
    (folder / "eng_Latn.txt").write_text("one two\n")
    local = invoke(db, "sources", "add", "mono", folder, "--languages", "eng")
    assert local.exit_code == 1 and "--languages: for a Hugging Face source" in said(local)
    mixed = invoke(db, "sources", "add", "mono", f"hf:{FINEWEB}", folder)
    assert mixed.exit_code == 1 and "is a source of its own" in said(mixed)


def test_a_run_trains_on_a_hub_source_end_to_end(tmp_path, monkeypatch):
    hub = FakeHub(FINEWEB, fineweb(tmp_path / "remote")).install(monkeypatch)
    db = tmp_path / "a.db"
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for lang, text in (("rus_Cyrl", "один два"), ("fra_Latn", "un deux")):
        (corpus / f"{lang}.txt").write_text(f"{text}\n{text} три\n")
    assert invoke(db, "ingest", corpus).exit_code == 0
    added = invoke(db, "sources", "add", "web", f"hf:{FINEWEB}", "--languages",
                   "rus_Cyrl,fra_Latn", "--bytes-per-language", "1")
    assert added.exit_code == 0, added.output
    assert len(hub.fetched) == 2  # one shard a language reaches a budget of one byte
    shown = said(invoke(db, "sources", "show", "web"))
    assert f"From hf:{FINEWEB} at revision {COMMIT} (split train, up to 1 bytes a language): 2 " \
           "shards" in shown
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a run reads the registered files: no hub
    run = invoke(db, "run", "--vocab", "300", "--langs", "rus_Cyrl,fra_Latn", "--train-on",
                 "web", "--pretokenize", "words", "--no-report", "--jobs", "1")
    assert run.exit_code == 0, run.output
    assert "Trained on source web" in said(run)
    export = json.loads(invoke(db, "export", "1").stdout)
    assert export["train_on"] == "web"
