"""A training source on the Hugging Face hub, by name: a dataset of Parquet shards per language,
of which only the shards a byte budget needs are fetched into the hub's own cache.

Layouts (each shard's language is its config's, the folder it lies in):

- FineWeb-2's: `data/<config>/<split>/*.parquet`, a config per language (`rus_Cyrl`);
- CulturaX's: `<config>/*.parquet`, a folder per language (`ru/ru_part_00000.parquet`), one split
  (`train`).

The revision is resolved once, to its commit, and every shard is fetched at that commit: the
source's files are the cache's snapshot of it, so later runs read the same shards, and the
commit is recorded with the source (`HubOrigin`). Offline (HF_HUB_OFFLINE, ANALYZER_OFFLINE, or a
hub that cannot be reached), what the cache holds of the dataset is used.

    fetched = fetch_hub_source(HubRequest("hf:HuggingFaceFW/fineweb-2", languages=["rus_Cyrl"],
                                          budget=2 * 10**9))
    scanned = scan_files(fetched.files)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from analyzer.errors import NotFound, did_you_mean
from analyzer.hub import hub_cache_dir, hub_failure, hub_timeout, offline_reason

from .errors import CorpusError
from .hub import hub_refusals, hub_spec
from .languages import normalise_language
from .sources import SourceFile, language_of, passed_over, source_file

DEFAULT_SPLIT = "train"
DATA_FOLDER = "data"
"""FineWeb-2's configs lie in `data/`; CulturaX's at the top."""
SHOWN = 12
"""How many names a message lists before it says how many more there are."""


@dataclass(frozen=True)
class Shard:
    """A Parquet file of the dataset: its path in the repository, size, config and split."""

    path: str
    size: int
    config: str
    split: str


@dataclass(frozen=True)
class HubRequest:
    """What to fetch: `hf:ORG/NAME[@REVISION]`, the configs by name and the languages by code
    (either or both), the split, and how many bytes of shards per language (None: all)."""

    spec: str
    configs: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    split: str = DEFAULT_SPLIT
    budget: int | None = None
    known: dict[str, dict[str, int]] = field(default_factory=dict)
    """Shards known to be in the dataset, `{commit: {path: size}}` (those of the source
    registered under the name): offline, the cache's copy of that commit is checked against
    them, so a shard whose file is gone from the cache is said, not passed over."""


@dataclass
class HubFetched:
    """The shards fetched (as a source's files, each with its language), and where from."""

    files: list[SourceFile]
    origin: dict
    """The repository, the commit, the configs, split, languages and budget, what each language
    had on the hub or in the cache, and the cache: recorded with the source."""
    notes: list[str] = field(default_factory=list)


def shard_of(path: str, size: int) -> Shard | None:
    """The shard a repository file is in either layout, or None (not Parquet, documentation,
    another layout).

    >>> shard_of("data/rus_Cyrl/train/000_00000.parquet", 7)
    Shard(path='data/rus_Cyrl/train/000_00000.parquet', size=7, config='rus_Cyrl', split='train')
    >>> shard_of("ru/ru_part_00000.parquet", 7).config, shard_of("README.md", 7)
    ('ru', None)
    >>> shard_of("/etc/x.parquet", 7), shard_of("ru//x.parquet", 7), shard_of("../x.parquet", 7)
    (None, None, None)
    """
    parts = path.split("/")
    # An empty part (an absolute path, `a//b`) is no repository file: joined to the cache's
    # folder it could name a place outside it. `..` is refused as a hidden name is.
    if not path.endswith(".parquet") or any(not part or passed_over(part) for part in parts):
        return None
    if parts[0] == DATA_FOLDER and len(parts) > 2:
        parts = parts[1:]
    if len(parts) == 2:
        return Shard(path, size, parts[0], DEFAULT_SPLIT)
    if len(parts) == 3:
        return Shard(path, size, parts[0], parts[1])
    return None


def named_language(config: str) -> str | None:
    """The language a config is named by, when its name is a language's code and nothing more
    (`rus_Cyrl`, `ru`); None for a config of a language's other text (FineWeb-2's
    `rus_Cyrl_removed`: what its filters took out), which only --config picks.

    >>> named_language("ru"), named_language("rus_Cyrl"), named_language("rus_Cyrl_removed")
    ('rus_Cyrl', 'rus_Cyrl', None)
    """
    return language_of(config) if len(re.split(r"[_-]", config)) <= 2 else None


def config_language(config: str) -> str | None:
    """The language a config stands for: its name (`rus_Cyrl`, `ru`), else its name less what
    follows the language (`rus_Cyrl_removed`); None when it names none.

    >>> config_language("ru"), config_language("rus_Cyrl_removed"), config_language("default")
    ('rus_Cyrl', 'rus_Cyrl', None)
    """
    parts = config.split("_")
    for end in range(len(parts), 0, -1):
        lang = language_of("_".join(parts[:end]))
        if lang is not None:
            return lang
    return None


def _listed(names: Iterable[str]) -> str:
    """`a, b, c` or `a, b, ... (40 in all)`."""
    names = list(names)
    shown = ", ".join(names[:SHOWN])
    return shown if len(names) <= SHOWN else f"{shown}, ... ({len(names):,} in all)"


def choose(shards: list[Shard], request: HubRequest, where: str) -> list[tuple[str, Shard]]:
    """The shards to fetch, each with its language: the chosen configs' shards of the split,
    per language in path order up to the first that reaches the budget. NotFound, listing what
    there is, for a config, language or split that `where` (the dataset, its cache) lacks.

    >>> hub = [Shard(f"data/fra_Latn/train/{i}.parquet", 10, "fra_Latn", "train") for i in range(5)]
    >>> [shard.path[-9:] for _, shard in choose(hub, HubRequest("hf:a/b", ["fra_Latn"], budget=25), "")]
    ['0.parquet', '1.parquet', '2.parquet']
    """
    by_config: dict[str, list[Shard]] = {}
    for shard in sorted(shards, key=lambda shard: shard.path):
        by_config.setdefault(shard.config, []).append(shard)
    configs = sorted(by_config)
    if not configs:
        raise NotFound(f"{where} has no Parquet shards in a layout analyzer reads "
                       "(data/<config>/<split>/*.parquet, or <config>/*.parquet)")
    if not request.configs and not request.languages:
        raise CorpusError(f"name the languages to fetch from {where} (--languages, e.g. "
                          f"{configs[0]}) or its configs (--config); it has {len(configs):,}: "
                          f"{_listed(configs)}", setting="languages")
    chosen: list[str] = []
    for config in request.configs:
        if config not in by_config:
            raise NotFound(f"{where} has no config {config!r}{did_you_mean(config, configs)} "
                           f"(its configs: {_listed(configs)})", setting="config", value=config)
        if config_language(config) is None:
            raise CorpusError(f"the config {config!r} of {where} names no language, so its "
                              "text cannot be given one", setting="config", value=config)
        chosen.append(config)
    languages = {config: named_language(config) for config in configs}
    known = sorted({lang for lang in languages.values() if lang is not None})
    for code in request.languages:
        lang = normalise_language(code)
        matching = [config for config in configs if languages[config] == lang]
        if not matching:
            same = [known_lang for known_lang in known if known_lang[:3] == lang[:3]]
            near = did_you_mean(lang[:3], same) if same else did_you_mean(lang, known)
            raise NotFound(f"{where} has no language {lang}{near} (its "
                           f"languages: {_listed(known)})", setting="languages", value=code,
                           language=lang)
        chosen += matching
    taken: list[tuple[str, Shard]] = []
    spent: dict[str, int] = {}
    for config in dict.fromkeys(chosen):
        language = config_language(config)
        assert language is not None  # every chosen config's name is a language's
        split = [shard for shard in by_config[config] if shard.split == request.split]
        if not split:
            splits = sorted({shard.split for shard in by_config[config]})
            raise NotFound(f"the config {config} of {where} has no split {request.split!r}"
                           f"{did_you_mean(request.split, splits)} (its splits: "
                           f"{_listed(splits)})", setting="split", value=request.split)
        for shard in split:
            if request.budget is not None and spent.get(language, 0) >= request.budget:
                break
            spent[language] = spent.get(language, 0) + shard.size
            taken.append((language, shard))
    return taken


def fetch_hub_source(request: HubRequest) -> HubFetched:
    """The request's shards, fetched at one commit into the hub's cache (or found there when
    offline), as a source's files. CorpusError or NotFound saying what to do when the dataset
    is gated, missing, not reachable and not cached, or lacks what was asked."""
    repo, revision = hub_spec(request.spec)
    offline = offline_reason()
    notes: list[str] = []
    folder: Path | None = None
    try:
        with hub_refusals(request.spec, repo, revision):
            if offline:
                commit, folder, shards = _cached(repo, revision)
                notes.append(f"downloads are off ({offline}): the shards are the Hugging Face "
                             f"cache's, at revision {commit}")
            else:
                commit, shards = _listing(repo, revision)
    except CorpusError:
        raise
    except Exception as error:  # no network, a proxy, a server error, no answer
        try:  # as huggingface_hub does: the cache's copy, if it has one
            commit, folder, shards = _cached(repo, revision)
        except Exception:
            raise CorpusError(f"{request.spec}: {hub_failure(error)}, and it is not in the "
                              "Hugging Face cache; nothing was registered") from None
        notes.append(f"{hub_failure(error)}: the shards are the Hugging Face cache's, at "
                     f"revision {commit}")
    where = f"{request.spec} (revision {commit}{', in the cache' if folder else ''})"
    if folder is not None:  # the cache's listing, and the shards known to be in the commit
        listed = {shard.path for shard in shards}
        shards += [shard for path, size in request.known.get(commit, {}).items()
                   if path not in listed and (shard := shard_of(path, size)) is not None]
    taken = choose(shards, request, where)
    if folder is not None:
        _refuse_lost_shards(request.spec, commit, folder, [shard for _, shard in taken])
    if folder is None:
        try:
            with hub_refusals(request.spec, repo, revision, fetching=True):
                paths = _download(repo, commit, [shard.path for _, shard in taken])
        except CorpusError:
            raise
        except Exception as error:
            raise CorpusError(f"{request.spec}: fetching its shards failed: "
                              f"{hub_failure(error)}; the shards fetched stay in the Hugging "
                              "Face cache, and running the command again fetches the rest; "
                              "nothing was registered") from None
    else:
        paths = [folder / shard.path for _, shard in taken]
    files = [source_file(lang, path, "parquet", resolve=False)
             for (lang, _), path in zip(taken, paths, strict=True)]
    if request.budget is not None:
        for lang in dict.fromkeys(lang for lang, _ in taken):
            size = sum(shard.size for code, shard in taken if code == lang)
            if size < request.budget:
                notes.append(f"{lang}: {size:,} bytes of shards, less than the budget of "
                             f"{request.budget:,}" + (" (all the cache holds)" if folder else
                                                      " (all the split has)"))
    origin = {"hub": repo, "revision": commit,
              "configs": list(dict.fromkeys(shard.config for _, shard in taken)),
              "split": request.split, "budget": request.budget, "shards": len(taken),
              "shard_bytes": sum(shard.size for _, shard in taken)}
    return HubFetched(files, origin, notes)


def _refuse_lost_shards(spec: str, commit: str, folder: Path, taken: list[Shard]) -> None:
    """CorpusError naming the shards to register that the cache's snapshot (`folder`) has lost:
    a link whose file (blob) was deleted, or a shard known to be in the commit whose link is
    gone. Registering the others would train on part of a language without a word."""
    lost = [shard.path for shard in taken if not (folder / shard.path).is_file()]
    if lost:
        raise CorpusError(f"{spec}: the Hugging Face cache's copy of revision {commit} has lost "
                          f"{len(lost):,} of the {len(taken):,} shards asked for, whose files "
                          f"are gone ({_listed(lost)}); nothing was registered. Run the command "
                          "online to fetch them again, or ask for less (--languages, "
                          "--bytes-per-language)", value=lost[0])


def _listing(repo: str, revision: str | None) -> tuple[str, list[Shard]]:
    """The commit the revision is now, and the shards at it with their sizes (one request,
    bounded by `hub_timeout`)."""
    from huggingface_hub import HfApi

    info = HfApi().dataset_info(repo, revision=revision, files_metadata=True,
                                timeout=hub_timeout())
    shards = [shard_of(sibling.rfilename, sibling.size or 0) for sibling in info.siblings or []]
    return str(info.sha), [shard for shard in shards if shard is not None]


def _cached(repo: str, revision: str | None) -> tuple[str, Path, list[Shard]]:
    """The commit, folder and shards of the cache's snapshot of the revision (its default
    branch's when None), with no network; LocalEntryNotFoundError when there is none."""
    from huggingface_hub import snapshot_download

    folder = Path(snapshot_download(repo, repo_type="dataset", revision=revision,
                                    local_files_only=True, cache_dir=hub_cache_dir()))
    # A link whose blob is gone is a shard all the same (size unknown): `_refuse_lost_shards`.
    found = [shard_of(str(path.relative_to(folder)), path.stat().st_size if path.is_file() else 0)
             for path in folder.rglob("*.parquet") if path.is_file() or path.is_symlink()]
    return folder.name, folder, [shard for shard in found if shard is not None]


def _download(repo: str, commit: str, names: list[str]) -> list[Path]:
    """Each file at the commit, fetched into the hub's cache or found current there (each
    request waits `hub_timeout()` at most for an answer)."""
    from huggingface_hub import hf_hub_download

    return [Path(hf_hub_download(repo, name, repo_type="dataset", revision=commit,
                                 etag_timeout=hub_timeout(), cache_dir=hub_cache_dir()))
            for name in names]


def hub_origin_said(origin: dict, first: str) -> str:
    """Where a hub source came from, in a sentence (`first`: one of its files, in the cache).

    >>> said = hub_origin_said({"hub": "a/b", "revision": "c0ffee", "split": "train",
    ...     "shards": 2, "shard_bytes": 10, "budget": None}, "/c/datasets--a--b/snapshots/c0ffee/x")
    >>> said.split(": ")[1].removesuffix(" to fetch the same again)")
    '2 shards, 10 bytes, in the Hugging Face cache /c/datasets--a--b (add hf:a/b@c0ffee'
    """
    cache = first.split("/snapshots/")[0]
    budget = f", up to {origin['budget']:,} bytes a language" if origin.get("budget") else ""
    return (f"From hf:{origin['hub']} at revision {origin['revision']} (split {origin['split']}"
            f"{budget}): {origin['shards']:,} shards, {origin['shard_bytes']:,} bytes, in the "
            f"Hugging Face cache {cache} (add hf:{origin['hub']}@{origin['revision']} to fetch "
            "the same again)")
