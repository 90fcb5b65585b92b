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
import decimal
import enum
import functools
import typing
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model
from pydantic.dataclasses import dataclass

from analyzer.bpe import MAX_VOCAB_SIZE, PRETOKENIZERS
from analyzer.bpe.contract import MAX_WEIGHT
from analyzer.bpe.pretokenize import NONE
from analyzer.bpe.reference import FIRST_NEW_ID, MIN_PAIR_COUNT
from analyzer.errors import SETTING, Invalid
from analyzer.identity import Algorithm

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
ALGORITHMS = tuple(str(algorithm) for algorithm in Algorithm)
"""The training algorithms' names (`analyzer.identity.Algorithm`); BPE first, the default."""
DEFAULT_PIVOT = "eng_Latn"


class TieBreak(enum.StrEnum):
    """How equal pair counts are ordered: the engine's `TIE_BREAKS`, in its order (a test
    keeps the two the same), as a type, so that a setting outside them is refused as the
    settings are made, naming it and the choices."""

    LEXICOGRAPHIC = "lexicographic"
    FIRST = "first"


class ExecutorName(enum.StrEnum):
    """Where a run's trainings run: the local pool, or a Dask cluster (`analyzer.runs.executor`
    picks the executor of each)."""

    LOCAL = "local"
    DASK = "dask"


class CountConvention(enum.StrEnum):
    """How a language's tokens are counted: each measured unit on its own and summed (the
    default), or all its measured units joined into one text and counted once, as Petrov et
    al. (2023) count FLORES (`analyzer.corpus.joined` defines the join)."""

    UNITS = "units"
    JOINED = "joined"


def values(choice: type[enum.StrEnum]) -> list[str]:
    """A choice's values, in its order, as plain strings (a form's options, a schema's enum).

    >>> values(CountConvention)
    ['units', 'joined']
    """
    return [member.value for member in choice]


EXECUTORS = tuple(values(ExecutorName))
COUNTS = tuple(values(CountConvention))


Sizes = Annotated[int, Field(ge=MIN_SIZE, le=MAX_SIZE)]
"""A vocabulary size: the 256 bytes alone, up to the most ids the engine numbers."""


def _distinct(value: Any) -> Any:
    """A list with each value once, in its first place (the run trains an algorithm once
    however often it is named, so `--algorithm bpe,bpe,unigram` is not four of three);
    anything else as it is, for the field's own checks.

    >>> _distinct(["bpe", "unigram", "bpe"])
    ['bpe', 'unigram']
    """
    return list(dict.fromkeys(value)) if isinstance(value, list) and \
        all(isinstance(item, str) for item in value) else value


def _bytes_as_written(value: Any) -> Any:
    """A number of bytes written with its unit (a form's text, a request's string: "2G",
    "19.1MB") as the integer, as the command line reads it; anything else as it is, for the
    field's own checks (a huge number past its bound)."""
    if not isinstance(value, str):
        return value
    number = bytes_written(value)
    if number is None:
        raise ValueError("write a number of bytes, e.g. 2G, 500M or 1000000")
    return MAX_STORED_INT + 1 if number > MAX_STORED_INT else int(number)


@dataclass(config=ConfigDict(extra="forbid"))
class RunSettings:
    """One run: which corpus, languages and pivot; the sizes to train; how (pre-tokenizers,
    parity, mix, tie-break); which production tokenizers to measure beside; where it runs.

    Each field's description, default and bounds are the only ones: the command line's help and
    options, the service's request body and this class's own checks come from them (a value out
    of bounds is a `SettingsError` naming the setting)."""

    sizes: Annotated[list[Sizes], Field(
        title="Vocabulary sizes",
        max_length=MAX_SIZES, examples=[[512, 4096]],
        description="Vocabulary sizes to train: 256 bytes + merges (none: only the production "
                    "tokenizers are measured).")] = dataclasses.field(default_factory=list)
    corpus: Annotated[str | None, Field(
        title="Corpus",
        description="The corpus; optional when the database holds only one.")] = None
    languages: Annotated[list[str] | None, Field(
        title="Languages",
        max_length=MAX_LANGUAGES,
        description="The run's languages, e.g. eng_Latn,rus_Cyrl (default: every language of "
                    "the corpus).")] = None
    pivot: Annotated[str | None, Field(
        title="Pivot language",
        description="The language premiums are measured against (default: English if present, "
                    "else the first).")] = None
    per_language: Annotated[bool, Field(
        title="One vocabulary per language",
        description="Also train one vocabulary per language.")] = True
    cross: Annotated[bool, Field(
        title="Cross counts",
        description="Every vocabulary counts every language.")] = False
    holdout: Annotated[float, Field(
        title="Held-out share",
        ge=0, lt=1, allow_inf_nan=False,
        description="The share of units held out of training and measured (0: train and "
                    "measure on all).")] = 0.0
    seed: Annotated[int, Field(
        title="Seed",
        ge=0, le=MAX_STORED_INT,
        description="The seed of the holdout split and the bootstrap.")] = 0
    tie_break: Annotated[TieBreak, Field(
        title="Tie-break",
        json_schema_extra={"enum": values(TieBreak)},
        description="How equal pair counts are ordered.")] = TieBreak.LEXICOGRAPHIC
    min_pair_count: Annotated[int, Field(
        title="Fewest pair occurrences",
        ge=1, le=MAX_STORED_INT,
        description="Training stops when the best pair occurs fewer times.")] = MIN_PAIR_COUNT
    jobs: Annotated[int | None, Field(
        title="Parallel processes",
        ge=1, le=MAX_JOBS,
        description="Parallel processes (default: the machine's cores); with the dask executor "
                    "and no scheduler, the local cluster's workers.")] = None
    tokenizers: Annotated[list[str], Field(
        title="Production tokenizers",
        max_length=MAX_TOKENIZERS,
        description="Production tokenizers to measure: catalog names (llama3, gemma3, "
                    "o200k_base, ...), all-available for every one on this machine, NAME=FILE, "
                    "hf:ORG/NAME, or files of your own (a .tiktoken file as FILE@cl100k_base, a "
                    "tokenizer.json, a SentencePiece .model).")] = dataclasses.field(
        default_factory=list)
    counts: Annotated[list[str], Field(
        title="Imported counts",
        max_length=MAX_TOKENIZERS,
        description="Token counts measured elsewhere (a closed model's, from its provider's "
                    "count-tokens endpoint), each NAME=FILE: a CSV with a header and the columns "
                    "unit (the unit's index in the corpus, from 0), lang and tokens, every "
                    "measured unit of every run language counted; stored as a vocabulary NAME "
                    "of the run, marked imported.")] = dataclasses.field(default_factory=list)
    pretokenizers: Annotated[list[str], Field(
        title="Pre-tokenizers",
        max_length=MAX_PRETOKENIZERS,
        description="How texts are cut before training (merges never cross a chunk): "
                    f"{', '.join(PRETOKENIZERS)}, re:PATTERN (its matches are the chunks) or "
                    "split:PATTERN (split around its matches); every trained vocabulary is "
                    "trained once per pre-tokenizer.")] = dataclasses.field(
        default_factory=lambda: [NONE])
    parity: Annotated[bool, Field(
        title="Parity-aware vocabulary",
        description="Also train a parity-aware vocabulary on all languages: each merge is the "
                    "most frequent pair of the language that compresses worst so far (Foroutan "
                    "et al. 2025), judged on the training units, or the held-out ones with a "
                    "holdout.")] = False
    global_merges: Annotated[int, Field(
        title="Shared merges before parity",
        ge=0, le=MAX_STORED_INT,
        description="With parity: the first merges are ordinary shared merges (the hybrid).")] = 0
    weights: Annotated[dict[str, Annotated[int, Field(ge=1, le=MAX_WEIGHT_VALUE)]], Field(
        title="Language weights",
        description="The training mix of the shared and parity-aware vocabularies: each unit "
                    "of a language counts this many times (default 1).")] = dataclasses.field(
        default_factory=dict)
    superbpe: Annotated[list[Sizes], Field(
        title="SuperBPE transitions",
        max_length=MAX_SUPERBPE,
        description="Also train a SuperBPE vocabulary (Liu et al. 2025) on all languages for "
                    "each transition T: the shared merges up to size T, then merges that may "
                    "cross words (SuperBPE's stage-2 split) up to the largest size; with "
                    "per_language, each language's own as well. Each T is below the largest "
                    "size.")] = dataclasses.field(default_factory=list)
    extend: Annotated[list[str], Field(
        title="Tokenizers to extend",
        max_length=MAX_EXTEND,
        description="Production tokenizers to extend for the run's languages: their own "
                    "pre-tokenizer and library cut and encode the texts, and merges over their "
                    "ids add the tokens of `added`; every language is measured at each. A "
                    "catalog name (o200k_base, cl100k_base, llama3, qwen3, ...) or hf:ORG/NAME "
                    "with a byte-level BPE tokenizer.json; SentencePiece models cannot be "
                    "extended.")] = dataclasses.field(default_factory=list)
    added: Annotated[list[Annotated[int, Field(ge=1, le=MAX_SIZE)]], Field(
        title="Tokens to add",
        max_length=MAX_SIZES, examples=[[1024, 8192]],
        description="How many tokens to add to each extended tokenizer.")] = dataclasses.field(
        default_factory=list)
    extend_langs: Annotated[list[str] | None, Field(
        title="Languages the extensions learn from",
        max_length=MAX_LANGUAGES,
        description="With extend: the languages whose texts teach the added merges (default: "
                    "every run language).")] = None
    target: Annotated[float | None, Field(
        title="Premium target",
        gt=1, le=MAX_TARGET, allow_inf_nan=False,
        description="With extend: beside within 10 percent of the pivot (1.10), also find the "
                    "added tokens that bring each language to this premium, e.g. 1.05.")] = None
    algorithms: Annotated[list[Algorithm], BeforeValidator(_distinct), Field(
        title="Training algorithms",
        max_length=len(ALGORITHMS), json_schema_extra={"items": {"enum": list(ALGORITHMS)}},
        description="Training algorithms: bpe (the analyzer's exact engine, always trained: "
                    "every cost is relative to it), unigram (the analyzer's own engine, "
                    "SentencePiece's algorithm) and wordpiece (the analyzer's own engine, Hugging "
                    "Face's WordPieceTrainer token for token), both "
                    "counted as Hugging Face tokenizers counts them, on the same byte-level alphabet, "
                    "pre-tokenizer and sizes; each size its own training. WordPiece needs a "
                    "pre-tokenizer other than none (e.g. words). Parity, SuperBPE and "
                    "extensions are BPE's.")] = dataclasses.field(
        default_factory=lambda: [Algorithm.BPE])
    executor: Annotated[ExecutorName, Field(
        title="Where the trainings run",
        json_schema_extra={"enum": values(ExecutorName)},
        description="Where the trainings run: local (a process pool) or dask (a Dask cluster: "
                    "the scheduler's, or a local cluster). Results are the same either "
                    "way.")] = ExecutorName.LOCAL
    scheduler: Annotated[str | None, Field(
        title="Dask scheduler",
        description="The Dask scheduler to run the trainings on, tcp://HOST:PORT (with the "
                    "dask executor; without one, a local cluster).")] = None
    train_on: Annotated[str | None, Field(
        title="Training source",
        description="A training source (analyzer sources add) that every trained vocabulary "
                    "learns from; every measurement stays on the corpus (default: train on "
                    "the corpus).")] = None
    train_bytes: Annotated[Annotated[int, BeforeValidator(_bytes_as_written)] | None, Field(
        title="Training bytes",
        ge=1, le=MAX_STORED_INT,
        description="With train_on: the bytes of text to train on, shared out between the "
                    "languages by the mix (default: all of the source). E.g. 2G, 500M, "
                    "1000000.")] = None
    min_chunk_count: Annotated[int, Field(
        title="Count floor",
        ge=1, le=MAX_STORED_INT,
        description="With train_on: train only on the chunks (the pieces the pre-tokenizer "
                    "cuts, such as words) that a language's sample has at least this many "
                    "times; the rarer ones are left out of training, so it needs less memory "
                    "(a refusal for memory says which floor fits). The corpus is still "
                    "measured whole. Languages written without spaces (Thai, Chinese, Japanese) "
                    "keep little: their chunks are mostly seen once (default 1: every "
                    "chunk).")] = 1
    mix: Annotated[str, Field(
        title="Training mix",
        max_length=10_000,
        description="With train_on: how the bytes are shared out between the languages: "
                    "natural (as the source has them), uniform (the same for each), "
                    "temperature:A (a language's share as its text's to the power A, as XLM-R "
                    "and mT5 sample, e.g. temperature:0.3) or LANG=SHARE,... (shares of your "
                    "own).")] = "natural"
    skip_invalid: Annotated[bool, Field(
        title="Skip unreadable documents",
        description="With train_on: skip the documents (or the rest of a file whose "
                    "compressed stream is broken) that cannot be read, and report them, "
                    "instead of refusing the source.")] = False
    count: Annotated[CountConvention, Field(
        title="How tokens are counted",
        json_schema_extra={"enum": values(CountConvention)},
        description="How a language's tokens are counted: units (each measured unit counted "
                    "on its own, the counts summed) or joined (its measured units joined into "
                    "one text, counted once, as Petrov et al. 2023 count FLORES; the premiums "
                    "and costs are then the joined texts', the intervals and per-unit "
                    "sections still the units').")] = CountConvention.UNITS
    special_tokens: Annotated[bool, Field(
        title="Count special tokens",
        description="Count the special tokens a production tokenizer's library adds to each "
                    "counted text (a tokenizer.json's beginning- or end-of-text tokens; "
                    "tiktoken and SentencePiece models add none).")] = False
    chunk_cache: Annotated[bool, Field(
        title="Keep counted chunks",
        description="With train_on: keep each language's counted chunks beside the database "
                    "and use them again (a second run with other sizes or settings reads no "
                    "text).")] = True


class SettingsError(Invalid):
    """A setting's value is outside what its definition allows (its bounds, its type, how many
    values it takes); `setting` names it."""


def _checked(init):
    """RunSettings' own constructor, its validation errors said as SettingsErrors."""
    @functools.wraps(init)
    def construct(self, *args, **kwargs):
        try:
            init(self, *args, **kwargs)
        except ValidationError as error:
            raise settings_error(error.errors()) from None
    return construct


RunSettings.__init__ = _checked(RunSettings.__init__)  # type: ignore[method-assign]


def settings_error(errors: list[Any], prefix: tuple = ()) -> SettingsError:
    """The first of pydantic's errors about the settings (their `loc` after `prefix`: the
    service's are under ("body",)) as a SettingsError in the analyzer's words.

    >>> str(settings_error([{"type": "less_than_equal", "loc": ("jobs",), "input": 300,
    ...                      "ctx": {"le": 256}, "msg": ""}]))
    'jobs must be from 1 to 256, not 300'
    """
    return settings_errors(errors[:1], prefix)[0]


def settings_errors(errors: list[Any], prefix: tuple = ()) -> list[SettingsError]:
    """Every one of pydantic's errors about the settings, each as `settings_error` says it
    (a form shows each at its field).

    >>> [e.setting for e in settings_errors([
    ...     {"type": "greater_than_equal", "loc": ("sizes", 0), "input": 100, "ctx": {"ge": 256}},
    ...     {"type": "less_than", "loc": ("holdout",), "input": 2, "ctx": {"lt": 1}}])]
    ['sizes', 'holdout']
    """
    return [_said(error, prefix) for error in errors]


def _said(error: Any, prefix: tuple) -> SettingsError:
    loc = tuple(error["loc"])[len(prefix):]
    name = str(loc[0]) if loc else "settings"
    value, kind = error.get("input"), error["type"]
    # The message names its setting `{setting}`: each face says it as it calls it.
    shown = f"{SETTING} {value}" if len(loc) == 2 and isinstance(loc[1], int) else \
        f"{SETTING} {loc[1]}={value}" if len(loc) == 2 else SETTING
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        where = f"{SETTING} must be {describe_bounds(name)}, not {value}" if len(loc) == 1 else \
            f"{shown}: each must be {describe_bounds(name)}"
        return SettingsError(where, setting=name, value=value)
    if kind == "finite_number":
        return SettingsError(f"{SETTING} must be a finite number, not {value}", setting=name,
                             value=value)
    if kind == "too_long":
        most = error.get("ctx", {}).get("max_length")
        return SettingsError(f"{SETTING} takes at most {most} values, not {len(value)}",
                             setting=name, value=len(value))
    if kind == "missing":
        return SettingsError(f"{SETTING} is needed", setting=name)
    if kind == "extra_forbidden":
        return SettingsError(f"there is no setting {name}; the settings are "
                             f"{', '.join(setting_names())}", value=name)
    if kind == "enum":  # a choice (a StrEnum), or a list's: the value and every choice
        said = "must be one of" if len(loc) == 1 else "must be among"
        return SettingsError(f"{SETTING} {said} {', '.join(choices(name))}, not {value!r}",
                             setting=name, value=value if isinstance(value, str) else None)
    if kind == "value_error":  # a check of ours: its own words, without pydantic's "Value error, "
        error = {**error, "msg": str(error.get("ctx", {}).get("error", error.get("msg")))}
    return SettingsError(f"{shown}: {error.get('msg', kind)} (not {value!r})", setting=name,
                         value=value if isinstance(value, str | int | float) else None)


def choices(name: str) -> list[str]:
    """A choice setting's values (its StrEnum's, or its list's), in order; none for any other
    setting.

    >>> choices("tie_break"), choices("algorithms"), choices("seed")
    (['lexicographic', 'first'], ['bpe', 'unigram', 'wordpiece'], [])
    """
    annotation = RunSettings.__pydantic_fields__[name].annotation  # type: ignore[attr-defined]
    for choice in (annotation, *typing.get_args(annotation)):
        if isinstance(choice, type) and issubclass(choice, enum.StrEnum):
            return values(choice)
    return []


def bounds(name: str) -> dict[str, float]:
    """A setting's bounds (ge, gt, le, lt), or its values' for a list or a mapping.

    >>> bounds("holdout")
    {'ge': 0, 'lt': 1}
    """
    info = RunSettings.__pydantic_fields__[name]  # type: ignore[attr-defined]
    found: dict[str, float] = {}
    for item in _metadata(info.annotation, info.metadata):
        for key in ("ge", "gt", "le", "lt"):
            if getattr(item, key, None) is not None:
                found[key] = getattr(item, key)
    return found


def _metadata(annotation: Any, metadata: list) -> list:
    """The field's constraints, and those of the values of its list or mapping."""
    found = list(metadata)
    for argument in typing.get_args(annotation):
        if typing.get_origin(argument) is Annotated:
            found += [item for extra in typing.get_args(argument)[1:]
                      for item in (getattr(extra, "metadata", None) or [extra])]
        elif argument is not type(None):
            found += _metadata(argument, [])
    return found


def describe_bounds(name: str, *, for_help: bool = False) -> str:
    """A setting's bounds in words. `for_help`: an upper bound that is only what a stored
    integer holds (2**31 and above) is no bound a reader of the help needs, and is left out
    (an error for a value above it still says it).

    >>> describe_bounds("seed"), describe_bounds("holdout"), describe_bounds("target")
    ('from 0 to 9,223,372,036,854,775,807', 'at least 0 and below 1', 'above 1 and at most 100')
    >>> describe_bounds("seed", for_help=True), describe_bounds("sizes", for_help=True)
    ('at least 0', 'from 256 to 16,777,216')
    """
    found = {key: int(value) if float(value).is_integer() else value
             for key, value in bounds(name).items()
             if not for_help or key not in ("le", "lt") or value < 2**31 - 1}
    low = f"{found['ge']:,}" if "ge" in found else f"{found['gt']:,}" if "gt" in found else None
    high = f"{found['le']:,}" if "le" in found else f"{found['lt']:,}" if "lt" in found else None
    if low is not None and high is not None and "ge" in found and "le" in found:
        return f"from {low} to {high}"
    parts = []
    if low is not None:
        parts.append(f"at least {low}" if "ge" in found else f"above {low}")
    if high is not None:
        parts.append(f"at most {high}" if "le" in found else f"below {high}")
    return " and ".join(parts)


def description(name: str) -> str:
    """A setting's description, as its definition gives it."""
    return RunSettings.__pydantic_fields__[name].description or ""  # type: ignore[attr-defined]


RECORDED = ("languages", "pivot", "sizes", "per_language", "cross", "holdout", "seed",
            "tie_break", "min_pair_count", "pretokenizers", "parity", "global_merges", "weights",
            "superbpe", "extend", "added", "extend_langs", "target", "algorithms", "train_on",
            "train_bytes", "min_chunk_count", "mix", "skip_invalid", "count", "special_tokens")
"""The settings a run's row records, resolved (codes normalised, sizes sorted, repeats gone).
Not recorded: the corpus (its id is), jobs and executor (results are the same whatever they
are), tokenizers and counts (each is a vocabulary of the run), the chunk cache (the same)."""


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


UNITS = {"": 1, "K": 1_000, "M": 1_000_000, "G": 1_000_000_000, "T": 1_000_000_000_000,
         "KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40}
"""The units a number may carry: k, M, G, T in thousands; Ki, Mi, Gi, Ti in 1,024s."""


def amount(value: str) -> decimal.Decimal | None:
    """A number with its unit applied, exactly (decimal arithmetic, never a float); None when
    it is not a number; infinity when it is far past any bound (never made into a huge
    integer)."""
    text = value.strip().upper()
    unit = next((unit for unit in sorted(UNITS, key=len, reverse=True)
                 if unit and text.endswith(unit)), "")
    try:
        number = decimal.Decimal(text[:len(text) - len(unit)].strip())
    except (decimal.InvalidOperation, ValueError):
        return None
    if not number.is_finite():  # nan, inf: not numbers of anything
        return None
    if number and number.adjusted() > 30:
        return decimal.Decimal("Infinity")
    # exact: 1.0000000000000000000000000001k is not 1000 (the default context keeps 28 digits)
    return decimal.Context(prec=120).multiply(number, UNITS[unit])


def bytes_written(value: str) -> decimal.Decimal | None:
    """A number of bytes as a person writes it, with a unit or not (2G, 500M, 1.5GB, 4Gi,
    1000000); None when it is not a number.

    >>> bytes_written("1.5GB"), bytes_written("2g"), bytes_written("lots")
    (Decimal('1500000000.0'), Decimal('2000000000'), None)
    """
    return amount(value.strip().upper().removesuffix("B"))


def byte_size(n_bytes: float) -> str:
    """A size in decimal units.

    >>> byte_size(1_234_567), byte_size(999)
    ('1.2 MB', '999 B')
    """
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.1f} {unit}"
    return f"{n_bytes:.0f} B"
