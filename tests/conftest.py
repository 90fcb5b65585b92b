"""Shared fixtures: where the real corpora are, when this checkout has them."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"


def shared_corpus(name: str) -> Path:
    """The text folder of a corpus in ../shared, or skip: a user's clone has no ../shared."""
    folder = SHARED_CORPORA / name / "text"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (it exists in the development and CI checkouts only)")
    return folder


@pytest.fixture
def udhr_text() -> Path:
    return shared_corpus("udhr")
