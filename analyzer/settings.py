"""What a run is asked to do: `RunSettings`, the one definition of a run's settings and of
every limit on them.

The command line fills it from its flags; the service's request body is generated from it
(`request_model`); a run's row records the settings in `RECORDED` (the store builds its column
map from that list); `RunRead`, the stored run's read model, has each of them under the same
name (tests/test_store_schema.py checks it). `analyzer.runs.resolve` checks the values against
the corpus, with messages that name each setting by its name here (`sizes`, `pretokenizers`).

Limits are defined once, below, and imported wherever a value is checked.

>>> RunSettings(sizes=[512, 4096]).pretokenizers
['none']
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.dataclasses import dataclass

from analyzer.bpe import MAX_VOCAB_SIZE
from analyzer.bpe.contract import MAX_WEIGHT
from analyzer.bpe.pretokenize import NONE
from analyzer.bpe.reference import FIRST_NEW_ID, MIN_PAIR_COUNT, TIE_BREAKS

MIN_SIZE = FIRST_NEW_ID
"""The smallest vocabulary: the 256 bytes, no merge."""
MAX_SIZE = MAX_VOCAB_SIZE
"""The largest vocabulary the engine trains (2**24)."""
MAX_STORED_INT = 2**63 - 1
"""The largest integer SQLite stores: seeds and counts beyond it could never be read back."""
MAX_UNIT_TOKENS = 2**32 - 1
"""The most tokens one unit's count can be: counts are stored as 32-bit unsigned integers."""
MAX_WEIGHT_VALUE = MAX_WEIGHT
"""A training weight is a whole number from 1 to this (the engine's uint32)."""
MAX_JOBS = 256
MAX_SIZES = 64
MAX_LANGUAGES = 1_000
"""The most languages a corpus (and so a run) has: refused at ingest beyond it."""
MAX_PRETOKENIZERS = 16
MAX_TOKENIZERS = 64
MAX_SUPERBPE = 8
MAX_EXTEND = 8
MAX_TARGET = 100.0
"""The largest premium target of an extension (a language at 100 times the pivot's tokens)."""
MAX_LIBRARY_SIZE = 1_000_000
"""The largest Unigram or WordPiece vocabulary (the Unigram trainer's seed vocabulary is a
million pieces: it cannot keep more)."""
ALGORITHMS = ("bpe", "unigram", "wordpiece")
"""The training algorithms, as `analyzer.store.Algorithm` names them; BPE first, the default."""
DEFAULT_PIVOT = "eng_Latn"
EXECUTORS = ("local", "dask")


@dataclass(config=ConfigDict(extra="forbid"))
class RunSettings:
    """One run: which corpus, languages and pivot; the sizes to train; how (pre-tokenizers,
    parity, mix, tie-break); which production tokenizers to measure beside; where it runs."""

    sizes: Annotated[list[int], Field(max_length=MAX_SIZES, examples=[[512, 4096]])]
    """Vocabulary sizes to train (256 bytes + merges), each from MIN_SIZE to MAX_SIZE."""
    corpus: str | None = None
    """The corpus's name; optional when the database holds one."""
    languages: Annotated[list[str] | None, Field(max_length=MAX_LANGUAGES)] = None
    """The run's languages (codes as ingested, or any form `normalise_language` reads); None:
    every language of the corpus."""
    pivot: str | None = None
    """The language premiums are measured against; None: English if present, else the first."""
    per_language: bool = True
    """Also train one vocabulary per language."""
    cross: bool = False
    """Every vocabulary counts every language (else a language's own counts it and the pivot)."""
    holdout: float = 0.0
    """The share of units held out of training and measured (0: train and measure on all)."""
    seed: int = 0
    """The seed of the holdout split and the bootstrap, from 0 to MAX_STORED_INT."""
    tie_break: Annotated[str, Field(json_schema_extra={"enum": list(TIE_BREAKS)})] = TIE_BREAKS[0]
    """How equal pair counts are ordered: one of TIE_BREAKS."""
    min_pair_count: int = MIN_PAIR_COUNT
    """Training stops when the best pair occurs fewer times than this (1 or more)."""
    jobs: int | None = None
    """Parallel processes (1 to MAX_JOBS; None: the machine's cores)."""
    tokenizers: Annotated[list[str], Field(max_length=MAX_TOKENIZERS)] = dataclasses.field(
        default_factory=list)
    """Production tokenizers to measure: catalog names, `all-available`, NAME=FILE,
    hf:ORG/NAME or files (see analyzer.external)."""
    counts: Annotated[list[str], Field(max_length=MAX_TOKENIZERS)] = dataclasses.field(
        default_factory=list)
    """Token counts measured elsewhere (a closed tokenizer's, from a provider's count-tokens
    endpoint), each NAME=FILE: a CSV of unit, lang, tokens (see analyzer.external.imported),
    stored as a vocabulary of the run named NAME and marked imported."""
    pretokenizers: Annotated[list[str], Field(max_length=MAX_PRETOKENIZERS)] = dataclasses.field(
        default_factory=lambda: [NONE])
    """Every trained vocabulary is trained once per pre-tokenizer: built-in names, re:PATTERN or
    split:PATTERN."""
    parity: bool = False
    """Also train a parity-aware vocabulary (each merge serves the worst-compressed language)."""
    global_merges: int = 0
    """The parity-aware vocabulary's first merges, chosen over all languages (the hybrid)."""
    weights: dict[str, int] = dataclasses.field(default_factory=dict)
    """The training mix of the shared and parity-aware vocabularies: `{lang: n}`, each unit of
    that language counting n times (1 to MAX_WEIGHT_VALUE; default 1)."""
    superbpe: Annotated[list[int], Field(max_length=MAX_SUPERBPE)] = dataclasses.field(
        default_factory=list)
    """Also train a SuperBPE vocabulary (Liu et al. 2025) on all languages for each size T
    here: the shared vocabulary's merges up to T, then merges that may cross words to the
    largest size (see analyzer.runs.builders.superbpe); with `per_language`, each language's own too
    (its own vocabulary's merges up to T, then its stage 2). Each T is below the largest
    size."""
    extend: Annotated[list[str], Field(max_length=MAX_EXTEND)] = dataclasses.field(
        default_factory=list)
    """Production tokenizers to extend (byte-level BPE ones: tiktoken rank files, byte-level
    tokenizer.json; catalog names or hf:ORG/NAME): each is continued with `added` merges
    learned over its own ids on the run's texts (see analyzer.runs.builders.extension)."""
    added: Annotated[list[int], Field(max_length=MAX_SIZES, examples=[[1024, 8192]])] = \
        dataclasses.field(default_factory=list)
    """How many tokens to add to each base of `extend` (the command line writes them +N in
    --vocab), each from 1 to what the engine can number after the base."""
    extend_langs: Annotated[list[str] | None, Field(max_length=MAX_LANGUAGES)] = None
    """The languages whose training texts teach the added merges; None: every run language.
    Every run language is measured."""
    target: float | None = None
    """A premium (tokens over the pivot's) the extension report finds, per language, the added
    tokens that reach it, beside 1.10 (within 10 %); above 1 and at most MAX_TARGET."""
    algorithms: Annotated[list[str], Field(max_length=len(ALGORITHMS),
                                           json_schema_extra={"items": {"enum": list(ALGORITHMS)}})] \
        = dataclasses.field(default_factory=lambda: [ALGORITHMS[0]])
    """The training algorithms: BPE (the analyzer's engine) and any of Unigram and WordPiece
    (Hugging Face tokenizers), each trained at every size, per pre-tokenizer, shared and (with
    `per_language`) per language. BPE is always trained: every cost is relative to it. Parity,
    SuperBPE and extensions are BPE's."""
    executor: Annotated[str, Field(json_schema_extra={"enum": list(EXECUTORS)})] = EXECUTORS[0]
    """Where the trainings run: "local" (a process pool) or "dask" (a Dask cluster)."""
    scheduler: str | None = None
    """With the dask executor: the scheduler's address (tcp://HOST:PORT); None starts a
    LocalCluster on this machine."""


RECORDED = ("languages", "pivot", "sizes", "per_language", "cross", "holdout", "seed",
            "tie_break", "min_pair_count", "pretokenizers", "parity", "global_merges", "weights",
            "superbpe", "extend", "added", "extend_langs", "target", "algorithms")
"""The settings a run's row records, resolved (codes normalised, sizes sorted, repeats gone).
Not recorded: the corpus (its id is), jobs and executor (results are the same whatever they
are), tokenizers and counts (each is a vocabulary of the run)."""


def setting_names() -> list[str]:
    """Every setting's name, in definition order."""
    return [f.name for f in dataclasses.fields(RunSettings)]


def request_model(name: str, exclude: tuple[str, ...] = ()) -> type[BaseModel]:
    """A pydantic model of the settings (minus `exclude`), for a request body: the same
    fields, types, defaults and limits as RunSettings, and nothing else (extra fields are
    refused)."""
    fields: dict[str, Any] = {}
    for item in dataclasses.fields(RunSettings):
        if item.name in exclude:
            continue
        info = RunSettings.__pydantic_fields__[item.name]  # type: ignore[attr-defined]
        fields[item.name] = (info.annotation, info)
    return create_model(name, __config__=ConfigDict(extra="forbid"), **fields)
