"""A corpus on the Hugging Face hub, by name: `hf:openlanguagedata/flores_plus[@REVISION]`.

The split's files (`dev/*`, `devtest/*`) are fetched with `huggingface_hub` into the hub's own
cache (HF_HOME, HF_HUB_CACHE), or found there when offline, and then read as the folder they
make (FLORES+'s layout). A gated dataset needs the user's token: `hf auth login`, or HF_TOKEN.

Every wait on the hub is bounded (`analyzer.hub.hub_timeout`): the listing is asked with a
timeout (`snapshot_download` asks without one, and waited forever on an endpoint that never
answered), then each file is fetched as `hf_hub_download` does, whose waits are bounded.
"""

from __future__ import annotations

import os
from pathlib import Path

from analyzer.hub import HUB_PREFIX, hub_failure, hub_name_problem, hub_timeout, offline_reason

from .errors import CorpusError

HUB_EXTRA = "pip install 'analyzer[tokenizers]'"
"""The extra that brings huggingface_hub."""


def is_hub_spec(path: Path | str) -> bool:
    return str(path).startswith(HUB_PREFIX)


def hub_dataset(spec: str, parts: list[str]) -> tuple[Path, str]:
    """The local folder of a hub dataset's `parts` (split folders) and where it came from
    (the repository, its revision, the cache). CorpusError saying what to do when the library
    is missing, the name is not one, the dataset is gated or not reachable."""
    repo, at, revision = spec[len(HUB_PREFIX):].partition("@")
    problem = hub_name_problem(repo, revision if at else None)
    if problem is not None:
        raise CorpusError(f"{spec}: {problem}; a dataset is hf:ORG/NAME or hf:ORG/NAME@REVISION")
    try:
        from huggingface_hub.utils import (
            GatedRepoError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )
    except ImportError:
        raise CorpusError(f"{spec} needs huggingface_hub: {HUB_EXTRA}") from None
    offline = offline_reason()
    try:
        folder = _cached(repo, revision or None, parts) if offline else \
            _download(repo, revision or None, parts)
    except GatedRepoError:
        raise CorpusError(
            f"{spec} is gated: accept its terms at https://huggingface.co/datasets/{repo} with "
            "your account, then give this machine your token (hf auth login, or HF_TOKEN); the "
            "hub refused the token it was given, or none was given") from None
    except RepositoryNotFoundError:
        raise CorpusError(f"{spec}: the hub has no dataset {repo} (or it is private and the "
                          "token given cannot see it)") from None
    except RevisionNotFoundError:
        raise CorpusError(f"{spec}: the dataset {repo} has no revision {revision!r}") from None
    except LocalEntryNotFoundError:  # offline, and not in the cache
        raise CorpusError(f"{spec}: not in the Hugging Face cache and downloads are off "
                          f"({offline}); run once online") from None
    except Exception as error:  # no network, a proxy, a server error, no answer
        try:  # as huggingface_hub does: the cache's copy, if it has one
            folder = _cached(repo, revision or None, parts)
        except Exception:
            raise CorpusError(f"{spec}: {hub_failure(error)}, and it is not in the Hugging Face "
                              "cache; nothing was stored") from None
    path = Path(folder)
    commit = path.name
    return path, f"{spec} (revision {commit}, Hugging Face cache {path})"


def _cached(repo: str, revision: str | None, parts: list[str]) -> Path:
    """The split folders' snapshot from the hub's cache, with no network (LocalEntryNotFoundError
    when it is not there)."""
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo, repo_type="dataset", revision=revision,
                                  allow_patterns=[f"{part}/*" for part in parts],
                                  local_files_only=True, cache_dir=os.environ.get("HF_HUB_CACHE")))


def _download(repo: str, revision: str | None, parts: list[str]) -> Path:
    """The split folders' files, fetched (or found current) in the hub's cache; the snapshot's
    folder. Each request waits `hub_timeout()` at most for an answer."""
    from huggingface_hub import HfApi, hf_hub_download

    timeout = hub_timeout()
    info = HfApi().dataset_info(repo, revision=revision, timeout=timeout)
    wanted = sorted(sibling.rfilename for sibling in info.siblings or []
                    if sibling.rfilename.split("/")[0] in parts)
    if not wanted:  # as snapshot_download does: the (empty) snapshot of that commit
        return _cached(repo, info.sha, parts)
    for name in wanted:
        fetched = hf_hub_download(repo, name, repo_type="dataset", revision=info.sha,
                                  etag_timeout=timeout, cache_dir=os.environ.get("HF_HUB_CACHE"))
    return Path(fetched[:-len(name)])  # .../snapshots/<commit>/ + dev/<lang>.parquet
