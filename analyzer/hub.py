"""The Hugging Face hub, as every face of analyzer names it: what a repository id and a
revision may be (never a path), and whether downloads are off. One definition below both the
corpora (`ingest hf:ORG/NAME`) and the production tokenizers (`--tokenizer hf:ORG/NAME`).

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
    return offline() or os.environ.get(HF_OFFLINE_ENV, "").upper() in {"1", "ON", "YES", "TRUE"}


def hub_name_problem(repo: str, revision: str | None) -> str | None:
    """What is wrong with a repository id (and revision), or None when they name one."""
    if not HUB_REPO.fullmatch(repo):
        return (f"{repo!r} is not a Hugging Face repository; name one as hf:ORG/NAME (letters, "
                "digits, '-', '_', '.')")
    if revision is not None and not HUB_REVISION.fullmatch(revision):
        return f"{revision!r} is not a revision (a branch, tag or commit of the repository, e.g. main)"
    return None
