"""A corpus on the Hugging Face hub, by name: `hf:openlanguagedata/flores_plus[@REVISION]`.

The split's files (`dev/*`, `devtest/*`) are fetched with `huggingface_hub` into the hub's own
cache (HF_HOME, HF_HUB_CACHE), or found there when offline, and then read as the folder they
make (FLORES+'s layout). A gated dataset needs the user's token: `hf auth login`, or HF_TOKEN.

Every wait on the hub is bounded (`analyzer.hub.hub_timeout`): the listing is asked with a
timeout (`snapshot_download` asks without one, and waited forever on an endpoint that never
answered), then each file is fetched as `hf_hub_download` does, whose waits are bounded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from analyzer.hub import (
    HUB_PREFIX,
    hub_cache_dir,
    hub_failure,
    hub_name_problem,
    hub_timeout,
    offline_reason,
)

from .errors import CorpusError

HUB_EXTRA = "pip install 'analyzer[tokenizers]'"
"""The extra that brings huggingface_hub."""


def is_hub_spec(path: Path | str) -> bool:
    return str(path).startswith(HUB_PREFIX)


def hub_spec(spec: str, what: str = "a dataset") -> tuple[str, str | None]:
    """The repository and revision (None: the default branch) of `hf:ORG/NAME[@REVISION]`;
    CorpusError when it names none, or huggingface_hub is missing.

    >>> hub_spec("hf:HuggingFaceFW/fineweb-2@v2.0.1")
    ('HuggingFaceFW/fineweb-2', 'v2.0.1')
    """
    repo, at, revision = spec[len(HUB_PREFIX):].partition("@")
    problem = hub_name_problem(repo, revision if at else None)
    if problem is not None:
        raise CorpusError(f"{spec}: {problem}; {what} is hf:ORG/NAME or hf:ORG/NAME@REVISION")
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise CorpusError(f"{spec} needs huggingface_hub: {HUB_EXTRA}") from None
    return repo, revision or None


@contextlib.contextmanager
def hub_refusals(spec: str, repo: str, revision: str | None, *, fetching: bool = False
                 ) -> Iterator[None]:
    """The hub's refusals (gated, no such dataset or revision, not in the cache while offline)
    as CorpusErrors saying what to do; any other error passes through. `fetching`: files are
    being downloaded after the listing was had, so a file not in the cache is the network
    failing on the way (huggingface_hub says it so), not downloads being off."""
    from huggingface_hub.utils import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        yield
    except GatedRepoError:  # before RepositoryNotFoundError, which it is a kind of
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
        if fetching:
            raise
        raise CorpusError(f"{spec}: not in the Hugging Face cache and downloads are off "
                          f"({offline_reason() or 'the hub could not be reached'}); run once "
                          "online") from None


def hub_dataset(spec: str, parts: list[str]) -> tuple[Path, str]:
    """The local folder of a hub dataset's `parts` (split folders) and where it came from
    (the repository, its revision, the cache). CorpusError saying what to do when the library
    is missing, the name is not one, the dataset is gated or not reachable."""
    repo, revision = hub_spec(spec)
    offline = offline_reason()
    try:
        with hub_refusals(spec, repo, revision):
            folder = _cached(repo, revision, parts) if offline else \
                _download(repo, revision, parts)
    except CorpusError:
        raise
    except Exception as error:  # no network, a proxy, a server error, no answer
        try:  # as huggingface_hub does: the cache's copy, if it has one
            folder = _cached(repo, revision, parts)
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
                                  local_files_only=True, cache_dir=hub_cache_dir()))


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
                                  etag_timeout=timeout, cache_dir=hub_cache_dir())
    return Path(fetched[:-len(name)])  # .../snapshots/<commit>/ + dev/<lang>.parquet
