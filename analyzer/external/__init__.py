"""Production tokenizers, measured on the same corpus as the trained vocabularies: a catalog of
named tokenizers (catalog.toml) resolved offline and verified by hash, Hugging Face
repositories, and files of the user's own; and the price table of the models that use them.
Optional: `analyzer[tokenizers]`."""

from typing import TYPE_CHECKING

from analyzer.lazy import lazy_names

# loaded now: the function `catalog` has the name of its module, which would shadow it once
# imported (the catalog is light: a TOML file read when first asked for)
from .catalog import CatalogEntry, CatalogFile, Format, catalog, entry

if TYPE_CHECKING:
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

__getattr__ = lazy_names(__name__, {
    ".errors": ("TokenizerError", "UnknownTokenizer"),
    ".local_store": ("fetch", "store_dir"),
    ".prices": ("ModelPrice", "PriceError", "load_prices"),
    ".tokenizers": ("ALL_AVAILABLE", "Availability", "ProductionTokenizer", "availability",
        "available_tokenizers", "expand_all_available", "resolve_tokenizer"),
})

__all__ = ["ALL_AVAILABLE", "Availability", "CatalogEntry", "CatalogFile", "Format", "ModelPrice",
           "PriceError", "ProductionTokenizer", "TokenizerError", "UnknownTokenizer", "availability",
           "available_tokenizers", "catalog", "entry", "expand_all_available", "fetch",
           "load_prices", "resolve_tokenizer", "store_dir"]
