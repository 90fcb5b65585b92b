"""Reading what is typed: sizes, byte counts, weights, lists, tokenizer names and output folders."""

from __future__ import annotations

import decimal
import os
import tempfile
from pathlib import Path

from ..bpe.pretokenize import USER_AROUND_PREFIX, USER_PREFIX
from ..external import (
    ALL_AVAILABLE,
    expand_all_available,
)
from ..files import is_special
from .app import Console, fail
from .formats import plain


def output_folder(text: str, option: str = "--out") -> Path:
    """The folder `option` names, checked (`check_output_folder`); an empty value is refused
    (a Path of "" is the current folder, which no one means by it)."""
    if not text.strip():
        raise fail(f"{option} is empty: name the folder to write into (e.g. {option} results)")
    folder = Path(text)
    check_output_folder(folder, option)
    return folder


def check_output_folder(out: Path, option: str = "--out") -> None:
    """Refuse, before any work, a folder for output that is a file, cannot be made, or cannot
    be written (a read-only folder or mount: tried, not guessed from permissions)."""
    if out.exists() and not out.is_dir():
        raise fail(f"{option} {out} is a file; it must be a folder (the reports go inside it)")
    ancestor = out
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise fail(f"{option} {out}: {ancestor} is a file, so the folder cannot be made")
    check_writable(ancestor, option, out)


def check_writable(folder: Path, option: str, out: Path) -> None:
    """Refuse a folder this process cannot create a file in, saying why (a file is made and
    removed: permissions alone do not tell a read-only mount, or root's reach)."""
    try:
        descriptor, probe = tempfile.mkstemp(prefix=".analyzer-probe-", dir=folder)
    except OSError as error:
        raise fail(f"{option} {out}: cannot write in {folder} ({error.strerror or error}); "
                    "nothing was done") from None
    os.close(descriptor)
    os.unlink(probe)


def check_output_file(out: Path, option: str = "--out") -> None:
    """Refuse, before any work, an output file in a missing or unwritable folder, or a folder
    as a file."""
    if out.is_dir():
        raise fail(f"{option} {out} is a folder; name the file to write")
    if not out.parent.is_dir():
        raise fail(f"{option} {out}: the folder {out.parent} does not exist")
    if not is_special(out):  # a pipe or /dev/stdout is written in place, not beside
        check_writable(out.parent, option, out)


def tokenizer_specs(specs: list[str] | None) -> list[str]:
    """The --tokenizer values, all-available made into the names available here; the catalog
    tokenizers it leaves out are said, with why."""
    expanded, skipped = expand_all_available(list(specs or []))
    console = Console(stderr=True)
    for name, why in skipped.items():
        console.print(f"--tokenizer {ALL_AVAILABLE}: skipping {plain(name)}: {plain(why)}",
                      soft_wrap=True)
    return expanded


def split_commas(values: list[str] | None) -> list[str]:
    """Repeated options and comma lists alike: ["a,b", "c"] -> ["a", "b", "c"]. A user's
    pattern (re:... or split:...) is taken whole, commas and all."""
    found = []
    for value in values or []:
        if value.startswith((USER_PREFIX, USER_AROUND_PREFIX)):
            found.append(value)
        else:
            found.extend(part.strip() for part in value.split(",") if part.strip())
    return found


def parse_vocab(values: list[str], extending: bool) -> tuple[list[int], list[int]]:
    """--vocab's sizes to train, and its +N (tokens added to each --extend base)."""
    sizes, added = [], []
    for value in split_commas(values):
        if value.startswith("+"):
            if not extending:
                raise fail(f"--vocab {value}: +N adds tokens to a production tokenizer; name it "
                            "with --extend (e.g. --extend o200k_base --vocab +1024)")
            added.extend(parse_sizes([value[1:]], "--vocab +"))
        else:
            sizes.extend(parse_sizes([value]))
    return sizes, added


def parse_sizes(values: list[str], name: str = "--vocab") -> list[int]:
    """Whole numbers from repeated options and comma lists alike."""
    sizes = []
    for value in values:
        for part in value.split(","):
            if not part.strip():
                continue
            try:
                sizes.append(int(part))
            except ValueError:
                raise fail(f"{name} {part.strip()!r} is not a whole number") from None
    return sizes


BYTE_UNITS = {"": 1, "K": 1_000, "M": 1_000_000, "G": 1_000_000_000, "T": 1_000_000_000_000}


def parse_bytes(value: str | None, name: str) -> int | None:
    """A number of bytes, with a unit or not: 2G, 500M, 1.5G, 1000000 (units of 1,000). Exact
    (decimal arithmetic, never a float): 9223372036854775807 is itself, not 2**63; a fraction of
    a byte is rounded down.

    >>> parse_bytes("1.5G", "--train-bytes"), parse_bytes("9223372036854775807", "-")
    (1500000000, 9223372036854775807)
    """
    if value is None:
        return None
    text = value.strip().upper().removesuffix("B")
    unit = text[-1:] if text[-1:] in BYTE_UNITS and text[-1:] else ""
    try:
        number = decimal.Decimal(text[:len(text) - len(unit)])
    except (decimal.InvalidOperation, ValueError):
        number = decimal.Decimal("NaN")
    if not number.is_finite() or not number >= 1:
        raise fail(f"{name} {value!r}: write a number of bytes, e.g. 2G, 500M or 1000000")
    if number.adjusted() > 30:  # far past any bound; never made into a huge integer
        raise fail(f"{name} {value!r} is more bytes than any bound allows")
    return int(number * BYTE_UNITS[unit])


def parse_weights(values: list[str] | None) -> dict[str, int]:
    """`--weight eng_Latn=20` (repeatable, or comma-separated) as {code: 20}."""
    weights: dict[str, int] = {}
    for value in split_commas(values):
        code, equals, number = value.partition("=")
        if not equals or not code.strip():
            raise fail(f"--weight {value!r}: write LANG=N, e.g. --weight eng_Latn=20")
        try:
            weight = int(number)
        except ValueError:
            raise fail(f"--weight {value!r}: {number.strip()!r} is not a whole number") from None
        if code.strip() in weights:
            raise fail(f"--weight {code.strip()} is given twice")
        weights[code.strip()] = weight
    return weights
