"""A corpus on the Hugging Face hub, by name: `hf:openlanguagedata/flores_plus[@REVISION]`.

The split's files (`dev/*`, `devtest/*`) are fetched with `huggingface_hub` into the hub's own
cache (HF_HOME, HF_HUB_CACHE), or found there when offline, and then read as the folder they
make (FLORES+'s layout). A gated dataset needs the user's token: `hf auth login`, or HF_TOKEN.
"""

from __future__ import annotations

import os
from pathlib import Path

from analyzer.hub import HF_OFFLINE_ENV, HUB_PREFIX, OFFLINE_ENV, hub_name_problem, hub_offline

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
        from huggingface_hub import snapshot_download
        from huggingface_hub.utils import (
            GatedRepoError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
        )
    except ImportError:
        raise CorpusError(f"{spec} needs huggingface_hub: {HUB_EXTRA}") from None
    patterns = [f"{part}/*" for part in parts]
    offline = hub_offline()
    try:
        folder = snapshot_download(repo, repo_type="dataset", revision=revision or None,
                                   allow_patterns=patterns, local_files_only=offline,
                                   cache_dir=os.environ.get("HF_HUB_CACHE"))
    except GatedRepoError:
        raise CorpusError(
            f"{spec} is gated: accept its terms at https://huggingface.co/datasets/{repo} with "
            "your account, then give this machine your token (hf auth login, or HF_TOKEN); the "
            "hub refused the token it was given, or none was given") from None
    except RepositoryNotFoundError:
        raise CorpusError(f"{spec}: the hub has no dataset {repo} (or it is private and the "
                          "token given cannot see it)") from None
    except LocalEntryNotFoundError:
        raise CorpusError(f"{spec}: not in the Hugging Face cache and downloads are off "
                          f"({OFFLINE_ENV} or {HF_OFFLINE_ENV} is set); run once online") from None
    except Exception as error:  # no network, a proxy, a server error: say which
        raise CorpusError(f"{spec}: could not get it from the Hugging Face hub "
                          f"({type(error).__name__}: {error})") from None
    path = Path(folder)
    commit = path.name
    return path, f"{spec} (revision {commit}, Hugging Face cache {path})"
