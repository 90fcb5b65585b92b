"""A production tokenizer's engine model, kept between runs (`kept`): loading a tokenizer then
reads a few arrays instead of parsing its files with its library, which takes seconds for the
larger tokenizer.json files; its library is loaded only when a text needs it (pieces to show,
a text holding one of its added tokens).

A kept model is found by the tokenizer files' SHA-256, its library's version and the code that
made it (the hash of engine_models.py and bpe/ranked.py): any change to one of them, and the
model is made again from the files. The file holds a JSON line, then the model's arrays, with
the SHA-256 of both checked on reading (`kept.sealed`); one that fails is made again.

>>> name_of("ab" * 32, "tokenizers 0.23.3").startswith("abab")
True
"""

from __future__ import annotations

import hashlib
from array import array
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from analyzer.bpe import ranked
from analyzer.bpe.ranked import PackedModel

from . import engine_models
from .engine_models import EngineTokenizer
from .kept import keep, kept_path, sealed, unsealed

PARTS = ("pieces", "starts", "merges", "byte_ids", "tokens", "token_starts")


@dataclass(frozen=True)
class KeptTokenizer:
    """What a run needs of a tokenizer the engine counts, without its library."""

    size: int
    library: str
    specials: int
    engine: EngineTokenizer
    tokens: list[bytes] | None


@cache
def _code() -> str:
    """The hash of the code a kept model depends on."""
    sources = [Path(engine_models.__file__), Path(ranked.__file__)]
    return hashlib.sha256(b"".join(path.read_bytes() for path in sources)).hexdigest()[:16]


def name_of(digest: str, library: str) -> str:
    return f"{digest}-{library.replace(' ', '-')}-{_code()}.engine"


def load(digest: str, library: str) -> KeptTokenizer | None:
    """The kept model of these files under this library ("tiktoken 0.14.0"), or None."""
    try:
        found = unsealed(kept_path("engines", name_of(digest, library)).read_bytes())
    except OSError:
        return None
    if found is None:
        return None
    about, body = found
    try:
        parts, at = {}, 0
        for part in PARTS:
            length = about["lengths"][part]
            parts[part] = body[at:at + length]
            at += length
        arrays = {}
        for part, kind in (("starts", "q"), ("merges", "i"), ("byte_ids", "i"),
                           ("token_starts", "q")):
            arrays[part] = array(kind)
            arrays[part].frombytes(parts[part])
        model = PackedModel(parts["pieces"], arrays["starts"], arrays["merges"],
                            arrays["byte_ids"], about["characters"], about["whole_first"])
        spec = about["engine"]
        engine = EngineTokenizer(model, tuple((name, around) for name, around in spec["steps"]),
                                 spec["library"], spec["normalizer"],
                                 tuple((token, normalized, i)
                                       for token, normalized, i in spec["added"]),
                                 tuple(spec["unsplit"]), spec["surrogates"], spec["digits"])
        tokens = None
        if about["has_tokens"]:
            starts = arrays["token_starts"]
            tokens = [parts["tokens"][starts[i]:starts[i + 1]] for i in range(len(starts) - 1)]
        return KeptTokenizer(about["size"], library, about["specials"], engine, tokens)
    except (ValueError, KeyError, TypeError):  # written by other code: made again
        return None


def store(digest: str, library: str, size: int, specials: int, engine: EngineTokenizer,
          model: PackedModel, tokens: list[bytes] | None) -> None:
    """Keep a model (its merges given, not derived) for the next load."""
    assert model.merges is not None
    token_starts = array("q", [0])
    for token in tokens or []:
        token_starts.append(token_starts[-1] + len(token))
    parts = {"pieces": model.pieces, "starts": model.starts.tobytes(),
             "merges": model.merges.tobytes(), "byte_ids": model.byte_ids.tobytes(),
             "tokens": b"".join(tokens or []), "token_starts": token_starts.tobytes()}
    body = b"".join(parts[part] for part in PARTS)
    about = {"size": size, "specials": specials, "characters": model.characters,
             "whole_first": model.whole_first, "has_tokens": tokens is not None,
             "engine": {"steps": engine.steps, "library": engine.library,
                        "normalizer": engine.normalizer, "added": engine.added,
                        "unsplit": engine.unsplit, "surrogates": engine.surrogates,
                        "digits": engine.digits},
             "lengths": {part: len(parts[part]) for part in PARTS}}
    keep(kept_path("engines", name_of(digest, library)), sealed(about, body))


def with_model(engine: EngineTokenizer, model: PackedModel) -> EngineTokenizer:
    return replace(engine, model=model)
