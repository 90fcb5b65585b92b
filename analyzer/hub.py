"""The Hugging Face hub, as every face of analyzer names it: what a repository id and a
revision may be (never a path), whether downloads are off (and why), where the hub is and how
long to wait for its answers. One definition below both the corpora (`ingest hf:ORG/NAME`) and
the production tokenizers (`--tokenizer hf:ORG/NAME`).

>>> hub_name_problem("openlanguagedata/flores_plus", None) is None
True
>>> hub_name_problem("../..", None)
"'../..' is not a Hugging Face repository; name one as hf:ORG/NAME (letters, digits, '-', '_', '.')"
"""

from __future__ import annotations

import os
import re

OFFLINE_ENV = "ANALYZER_OFFLINE"
HF_OFFLINE_ENV = "HF_HUB_OFFLINE"
HUB_PREFIX = "hf:"
ENDPOINT_ENV = "HF_ENDPOINT"
DEFAULT_ENDPOINT = "https://huggingface.co"
CACHE_ENV = "HF_HUB_CACHE"
TIMEOUT_ENV = "HF_HUB_ETAG_TIMEOUT"
DEFAULT_TIMEOUT = 10.0
"""Seconds to wait for one answer of the hub (huggingface_hub's own default for its file
checks). Its listings have no bound of their own: an endpoint that takes the connection and
never answers held `ingest hf:` forever."""

HUB_REPO = re.compile(r"(?!.*(?:--|\.\.))[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9])?/"
                      r"[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9])?")
"""A Hugging Face repository id, ORG/NAME, as the hub allows them (letters, digits, `-`, `_`,
`.`; neither `--` nor `..`; each part starting and ending with a letter or digit): never a
path."""
HUB_REVISION = re.compile(r"(?!.*\.\.)[A-Za-z0-9][\w./-]{0,199}")
"""A branch, tag or commit of a hub repository (`main`, `v1.0`, `refs/pr/1`, a hash)."""


def offline() -> bool:
    """ANALYZER_OFFLINE=1: nothing is downloaded (tests set it; so may an air-gapped user)."""
    return bool(os.environ.get(OFFLINE_ENV))


def hub_offline() -> bool:
    """Whether the hub is off: ANALYZER_OFFLINE, or huggingface_hub's own HF_HUB_OFFLINE."""
    return offline_reason() is not None


def offline_reason() -> str | None:
    """Which settings turn the hub off, in words ("HF_HUB_OFFLINE is set"); None: none does."""
    found = [name for name, on in ((OFFLINE_ENV, offline()), (HF_OFFLINE_ENV, os.environ.get(
        HF_OFFLINE_ENV, "").upper() in {"1", "ON", "YES", "TRUE"})) if on]
    if not found:
        return None
    return f"{' and '.join(found)} {'are' if len(found) > 1 else 'is'} set"


def hub_endpoint() -> str:
    """Where the hub is: `$HF_ENDPOINT` (a mirror), else huggingface.co."""
    return os.environ.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT


def hub_cache_dir() -> str | None:
    """The hub's cache folder as the user set it (HF_HUB_CACHE), else None: huggingface_hub's
    own default (HF_HOME/hub, ~/.cache/huggingface/hub)."""
    return os.environ.get(CACHE_ENV)


def hub_timeout() -> float:
    """Seconds to wait for one answer of the hub: `$HF_HUB_ETAG_TIMEOUT` (huggingface_hub's
    own setting) when it is a positive number, else 10."""
    try:
        value = float(os.environ.get(TIMEOUT_ENV, ""))
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if value > 0 else DEFAULT_TIMEOUT


def hub_failure(error: Exception) -> str:
    """What went wrong on the way to the hub, in words that name the endpoint (and the wait,
    when it was the wait).

    >>> hub_failure(ConnectionRefusedError(111, "refused")).split(" at ")[1]
    'https://huggingface.co could not be reached (ConnectionRefusedError: [Errno 111] refused)'
    """
    name = type(error).__name__
    said = f"({name}: {str(error)[:300]})"
    if "timeout" in name.lower() or isinstance(error, TimeoutError):
        return (f"the Hugging Face hub at {hub_endpoint()} did not answer within "
                f"{hub_timeout():g} s ({TIMEOUT_ENV} sets the wait)")
    if isinstance(error, OSError) or "connect" in name.lower() or name == "LocalEntryNotFoundError":
        return f"the Hugging Face hub at {hub_endpoint()} could not be reached {said}"
    return f"the Hugging Face hub at {hub_endpoint()} answered with an error {said}"


def hub_name_problem(repo: str, revision: str | None) -> str | None:
    """What is wrong with a repository id (and revision), or None when they name one."""
    if not HUB_REPO.fullmatch(repo):
        return (f"{repo!r} is not a Hugging Face repository; name one as hf:ORG/NAME (letters, "
                "digits, '-', '_', '.')")
    if revision is not None and not HUB_REVISION.fullmatch(revision):
        return f"{revision!r} is not a revision (a branch, tag or commit of the repository, e.g. main)"
    return None
