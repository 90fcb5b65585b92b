"""Production tokenizers, each counted by its own library's encoder (never re-implemented),
with special tokens treated as plain text.

    resolve_tokenizer("cl100k_base").count(["hello world"])   # [2]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .rank_files import RankFileError, RankFileFinder, finding_rank_files

EXTRA = "pip install 'analyzer[tokenizers]'"
TIKTOKEN_NAMES = ("gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base")


class TokenizerError(ValueError):
    """A tokenizer that cannot be loaded; the message says what was tried or what to install."""


@dataclass
class ProductionTokenizer:
    name: str
    library: str
    size: int
    source: str
    count: Callable[[list[str]], list[int]]
    """Tokens of each text."""


def resolve_tokenizer(spec: str) -> ProductionTokenizer:
    """A tiktoken encoding name; `FILE.tiktoken[@ENCODING]`; a `tokenizer.json`; a `.model`."""
    path_part, _, base = spec.partition("@")
    path = Path(path_part)
    if spec in TIKTOKEN_NAMES:
        return _tiktoken(spec, None)
    if path.suffix == ".tiktoken":
        base = base or path.stem
        if base not in TIKTOKEN_NAMES:
            raise TokenizerError(f"{spec}: say which encoding the rank file follows (for its split "
                                 f"pattern and special tokens), e.g. {path_part}@cl100k_base")
        return _tiktoken(base, _existing(path))
    if path.suffix == ".json":
        return _hugging_face(_existing(path))
    if path.suffix == ".model":
        return _sentencepiece(_existing(path))
    if path.exists():
        raise TokenizerError(f"{spec}: not a tokenizer this knows (.tiktoken, tokenizer.json, "
                             "SentencePiece .model)")
    raise TokenizerError(f"unknown tokenizer {spec!r}: not a file, nor one of "
                         f"{', '.join(TIKTOKEN_NAMES)}")


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise TokenizerError(f"{path}: no such file")
    return path


def _tiktoken(encoding: str, explicit: Path | None) -> ProductionTokenizer:
    try:
        import tiktoken
        from tiktoken_ext import openai_public
    except ImportError:
        raise TokenizerError(f"{encoding} needs tiktoken: {EXTRA}") from None
    constructor = openai_public.ENCODING_CONSTRUCTORS.get(encoding)
    if constructor is None:
        raise TokenizerError(f"tiktoken {tiktoken.__version__} has no encoding {encoding!r}")
    finder = RankFileFinder(explicit)
    try:
        with finding_rank_files(finder):
            arguments = constructor()
    except RankFileError as error:
        raise TokenizerError(f"{encoding}: {error}") from None
    except (ValueError, KeyError, OSError) as error:
        raise TokenizerError(f"{explicit or encoding}: not a valid rank file ({error})") from None
    name = explicit.name if explicit else encoding
    arguments = {**arguments, "name": name}
    if explicit:  # the user's own ranks need not have the official vocabulary size
        arguments.pop("explicit_n_vocab", None)
    encoder = tiktoken.Encoding(**arguments)
    # n_vocab is the largest id + 1; the special-token ids of a user's file follow the base
    # encoding's numbering, so count its tokens instead.
    size = len(arguments["mergeable_ranks"]) + len(arguments["special_tokens"]) if explicit \
        else encoder.n_vocab
    return ProductionTokenizer(name, f"tiktoken {tiktoken.__version__}", size,
                               "; ".join(dict.fromkeys(finder.sources)),
                               lambda texts: [len(ids) for ids in encoder.encode_ordinary_batch(texts)])


def _hugging_face(path: Path) -> ProductionTokenizer:
    try:
        import tokenizers
    except ImportError:
        raise TokenizerError(f"{path} needs Hugging Face tokenizers: {EXTRA}") from None
    try:
        tokenizer = tokenizers.Tokenizer.from_file(str(path))
    except Exception as error:  # the Rust side raises plain Exception
        raise TokenizerError(f"{path}: not a Hugging Face tokenizer.json ({error})") from None
    tokenizer.encode_special_tokens = True  # special tokens in the text are plain text

    def count(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]

    return ProductionTokenizer(path.name, f"tokenizers {tokenizers.__version__}",
                               tokenizer.get_vocab_size(), str(path), count)


def _sentencepiece(path: Path) -> ProductionTokenizer:
    try:
        import sentencepiece
    except ImportError:
        raise TokenizerError(f"{path} needs sentencepiece: {EXTRA}") from None
    try:
        processor = sentencepiece.SentencePieceProcessor(model_file=str(path))
    except Exception as error:
        raise TokenizerError(f"{path}: not a SentencePiece model ({error})") from None

    def count(texts: list[str]) -> list[int]:
        return [len(ids) for ids in processor.encode(texts)]

    return ProductionTokenizer(path.name, f"sentencepiece {sentencepiece.__version__}",
                               processor.get_piece_size(), str(path), count)
