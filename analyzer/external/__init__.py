"""Production tokenizers, measured on the same corpus as the trained vocabularies: a catalog of
named tokenizers (catalog.toml) resolved offline and verified by hash, Hugging Face
repositories, and files of the user's own; and the price table of the models that use them.
Optional: `analyzer[tokenizers]`."""

from .catalog import CatalogEntry, CatalogFile, Format, catalog, entry
from .errors import TokenizerError, UnknownTokenizer
from .local_store import fetch, store_dir
from .prices import ModelPrice, PriceError, load_prices
from .tokenizers import (
    ALL_AVAILABLE,
    Availability,
    ProductionTokenizer,
    availability,
    available_tokenizers,
    expand_all_available,
    resolve_tokenizer,
)

__all__ = ["ALL_AVAILABLE", "Availability", "CatalogEntry", "CatalogFile", "Format", "ModelPrice",
           "PriceError", "ProductionTokenizer", "TokenizerError", "UnknownTokenizer", "availability",
           "available_tokenizers", "catalog", "entry", "expand_all_available", "fetch",
           "load_prices", "resolve_tokenizer", "store_dir"]
