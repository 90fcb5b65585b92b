"""The price table: what models charge per million tokens, and their context windows.

The packaged prices.toml is dated and sourced entry by entry; a user's own file in the same
format replaces it (`analyzer report RUN --prices FILE`).

    >>> [p.model for p in load_prices() if p.tokenizer == "llama4"]
    ['Llama 4 Maverick']
"""

from __future__ import annotations

import datetime
import tomllib
from importlib.resources import files as package_files
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from analyzer.corpus.files import too_many_digits
from analyzer.errors import Invalid, setting

from .catalog import validation_message


class PriceError(Invalid):
    """A price table that cannot be read; the message names the file, the entry and the field."""


class ModelPrice(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    provider: str = Field(min_length=1)
    tokenizer: str = Field(min_length=1)
    """The tokenizer's name in a run: a catalog name, or the name a file was stored under."""
    input: float = Field(ge=0, allow_inf_nan=False)
    """US dollars per million input tokens."""
    output: float = Field(ge=0, allow_inf_nan=False)
    """US dollars per million output tokens."""
    context_window: int = Field(gt=0)
    date: datetime.date
    """When the source listed this price."""
    source: str = Field(pattern=r"^https?://\S+$")


def load_prices(path: Path | None = None) -> list[ModelPrice]:
    """The packaged table, or the user's file; PriceError says what is wrong, and where."""
    if path is None:
        text = package_files("analyzer.external").joinpath("prices.toml").read_text(encoding="utf-8")
        where = "prices.toml"
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise PriceError(f"{setting('prices')} {path}: cannot read it ({error})") from None
        where = f"{setting('prices')} {path}"
    try:
        raw = tomllib.loads(text)
    except ValueError as error:  # TOMLDecodeError, or a number of too many digits
        raise PriceError(f"{where}: {too_many_digits(error) or f'not TOML ({error})'}") from None
    unknown = set(raw) - {"model"}
    if unknown or not isinstance(raw.get("model"), list):
        raise PriceError(f"{where}: expected only [[model]] entries"
                         + (f", found {', '.join(sorted(unknown))}" if unknown else ""))
    prices = []
    for number, item in enumerate(raw["model"], start=1):
        try:
            prices.append(ModelPrice.model_validate(item))
        except ValidationError as error:
            label = item.get("model") if isinstance(item, dict) and item.get("model") else None
            name = f"model {number}" + (f" ({label})" if label else "")
            raise PriceError(f"{where}: {name}: {validation_message(error)}") from None
    if not prices:
        raise PriceError(f"{where}: no [[model]] entries")
    return prices
