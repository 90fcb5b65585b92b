"""Production tokenizers (tiktoken encodings, Hugging Face tokenizer.json, SentencePiece),
measured on the same corpus as the trained vocabularies. Optional: `analyzer[tokenizers]`."""

from .rank_files import SHIPPED
from .tokenizers import ProductionTokenizer, TokenizerError, resolve_tokenizer

__all__ = ["SHIPPED", "ProductionTokenizer", "TokenizerError", "resolve_tokenizer"]
