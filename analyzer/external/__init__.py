"""Production tokenizers (tiktoken encodings, Hugging Face tokenizer.json, SentencePiece),
measured on the same corpus as the trained vocabularies. Optional: `analyzer[tokenizers]`."""

from .rank_files import OFFLINE_ENV, SHIPPED, RankFileFinder
from .tokenizers import TIKTOKEN_NAMES, ProductionTokenizer, TokenizerError, resolve_tokenizer

__all__ = ["OFFLINE_ENV", "SHIPPED", "TIKTOKEN_NAMES", "ProductionTokenizer", "RankFileFinder",
           "TokenizerError", "resolve_tokenizer"]
