"""Production tokenizers' encoders, built once per process and kept: a run's settings check,
its counting, the service's checks of many runs and its playground all use the one built
(building one takes its library a second or more: o200k_base 2.6 s, gemma3 7 s on this
machine). Each is kept under its tokenizer's name and its files' SHA-256, so a file that
changed is built again; the least recently used goes first beyond `KEPT` encoders or `KEPT_BYTES`
of their files (an encoder takes a few times its files in memory).

    encoder(("cl100k_base", (sha,)), 1_681_126, lambda: Loaded(formats.build(...)))  # once

What is kept is whatever `build` makes (`tokenizers.Loaded`: the encoder, and the engine's
counter made from it), so that the engine's compiled model is made once per process too.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

Kept = TypeVar("Kept")

KEPT = 8
"""Encoders a process keeps at most."""

KEPT_BYTES = 256 << 20
"""The files behind the encoders a process keeps, at most (always at least one encoder)."""

_kept: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
_lock = threading.Lock()
_built = 0


def encoder(key: Hashable, size: int, build: Callable[[], Kept]) -> Kept:
    """The encoder kept under `key` (a tokenizer's name and its files' SHA-256), or the one
    `build` makes (from files of `size` bytes), then kept. Two threads asking for one wait for
    the one build (a build holds the lock: once per process)."""
    global _built
    with _lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key][0]
        built = build()
        _built += 1
        _kept[key] = (built, size)
        while len(_kept) > 1 and (len(_kept) > KEPT
                                  or sum(kept for _, kept in _kept.values()) > KEPT_BYTES):
            _kept.popitem(last=False)
        return built


def builds() -> int:
    """How many encoders this process has built (a test counts them)."""
    return _built


def forget() -> None:
    """Drop every encoder kept (a test starts from none)."""
    with _lock:
        _kept.clear()
