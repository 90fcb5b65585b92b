"""Reading what is typed: sizes, byte counts, weights, lists, tokenizer names and output folders."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..bpe.pretokenize import USER_AROUND_PREFIX, USER_PREFIX
from ..files import is_special
from ..settings import amount, bytes_written
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
    """Refuse, before any work, a folder for output that is a file, a link to nothing, cannot
    be made, or cannot be written (a read-only folder or mount: tried, not guessed from
    permissions)."""
    _refuse_dangling_link(out, option, "folder")
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


def check_output_file(out: Path, option: str = "--out", replace: bool = False) -> None:
    """Refuse, before any work, an output file in a missing or unwritable folder, a folder as
    a file, a link to nothing in a missing folder, and (unless `replace`) a file that is there
    already."""
    if out.is_dir():
        raise fail(f"{option} {out} is a folder; name the file to write")
    if out.is_symlink() and not out.exists() and not out.resolve().parent.is_dir():
        _refuse_dangling_link(out, option, "file")
    if not replace and out.exists() and not is_special(out):
        raise fail(f"{option} {out} is there already; pass --replace to replace it (nothing "
                   "was written)")
    if not out.parent.is_dir():
        raise fail(f"{option} {out}: the folder {out.parent} does not exist")
    if not is_special(out):  # a pipe or /dev/stdout is written in place, not beside
        check_writable(out.parent, option, out)


def _refuse_dangling_link(out: Path, option: str, kind: str) -> None:
    """A link to nothing, refused in words (making a folder there fails as "File exists")."""
    if out.is_symlink() and not out.exists():
        raise fail(f"{option} {out} is a link to {os.readlink(out)}, which does not exist; "
                   f"make the {kind} it names, or give another")


def typed_text(value: str) -> str:
    """A text argument as it was typed. Under a locale that is not UTF-8 (LC_ALL=C without
    coercion), Python reads each byte of UTF-8 typed text that the locale lacks as an escape (a
    lone surrogate): they are read back as the UTF-8 they are. Bytes that are not UTF-8 stay
    escapes, which the library refuses, naming the byte. (Paths are left as they are: the
    system names files by those bytes.)

    >>> typed_text("caf" + chr(0xDCC3) + chr(0xDCA9)), typed_text("caf" + chr(0xDCE9))[3:]
    ('café', '\\udce9')
    """
    try:
        return os.fsencode(value).decode("utf-8")
    except (UnicodeError, ValueError):
        return value


def tokenizer_specs(specs: list[str] | None) -> list[str]:
    """The --tokenizer values, repeated or as comma lists (a value that is a file is taken
    whole), all-available made into the names available here; the catalog tokenizers it
    leaves out are said, with why."""
    from ..external import ALL_AVAILABLE, expand_all_available

    listed = [part for spec in specs or []
              for part in ([spec] if _names_a_file(spec) else split_commas([spec]))]
    expanded, skipped = expand_all_available(listed)
    console = Console(stderr=True)
    for name, why in skipped.items():
        console.print(f"--tokenizer {ALL_AVAILABLE}: skipping {plain(name)}: {plain(why)}",
                      soft_wrap=True)
    return expanded


def output_format(output, as_json: bool) -> str:
    """What `show` or `run` prints: `--format`'s value, or json for `--json`, which another
    --format contradicts."""
    chosen = getattr(output, "value", output)
    if as_json and chosen not in ("table", "json"):
        raise fail(f"--json is --format json; give one of them, not --json with --format {chosen}")
    return "json" if as_json else chosen


def _names_a_file(spec: str) -> bool:
    """Whether a --tokenizer value names a file that exists (FILE, NAME=FILE, FILE@BASE or
    NAME=FILE@BASE): such a value is taken whole, commas and all."""
    given = spec.partition("=")[2] if "=" in spec else spec
    for candidate in (spec, given, given.rpartition("@")[0] or given):
        try:
            if Path(candidate).exists():
                return True
        except (OSError, ValueError):  # a name too long for a path, or with a NUL
            continue
    return False


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
    """--vocab's sizes to train, and its +N (tokens added to each --extend base); `none`
    alone trains nothing (only the production tokenizers are measured), as the help says.

    >>> parse_vocab(["512,4k"], False), parse_vocab(["none"], False)
    (([512, 4000], []), ([], []))
    """
    given = split_commas(values)
    if any(value.lower() == "none" for value in given):
        if len(given) > 1:
            raise fail(f"--vocab {','.join(given)}: none trains nothing, so it takes no sizes "
                       "beside it; give one or the other")
        return [], []
    sizes, added = [], []
    for value in given:
        if value.startswith("+"):
            if not extending:
                raise fail(f"--vocab {value}: +N adds tokens to a production tokenizer; name it "
                            "with --extend (e.g. --extend o200k_base --vocab +1024)")
            added.extend(parse_sizes([value[1:]], "--vocab +"))
        else:
            sizes.extend(parse_sizes([value]))
    return sizes, added


def parse_sizes(values: list[str], name: str = "--vocab") -> list[int]:
    """Whole numbers from repeated options and comma lists alike, with a unit or not, as byte
    sizes take them: 512, 32k (32,000), 32Ki (32,768), 1M.

    >>> parse_sizes(["512,32k", "32Ki", "1.5k"])
    [512, 32000, 32768, 1500]
    """
    sizes = []
    for value in values:
        for part in value.split(","):
            if not part.strip():
                continue
            number = amount(part)
            if number is not None and number.is_infinite():
                raise fail(f"{name} {part.strip()!r} is more than any bound allows")
            if number is None or number != number.to_integral_value():
                raise fail(f"{name} {part.strip()!r} is not a whole number (write e.g. 512, 32k "
                           "or 32Ki for 32,768)")
            sizes.append(int(number))
    return sizes


def parse_bytes(value: str | None, name: str) -> int | None:
    """A number of bytes, with a unit or not: 2G, 500M, 1.5GB, 4Gi, 1000000 (`UNITS`). Exact:
    9223372036854775807 is itself, not 2**63; a fraction of a byte is rounded down.

    >>> parse_bytes("1.5G", "--train-bytes"), parse_bytes("9223372036854775807", "-")
    (1500000000, 9223372036854775807)
    >>> parse_bytes("2GB", "-"), parse_bytes("1Gi", "-")
    (2000000000, 1073741824)
    """
    if value is None:
        return None
    number = bytes_written(value)
    if number is not None and number.is_infinite():
        raise fail(f"{name} {value!r} is more bytes than any bound allows")
    if number is None or not number >= 1:
        raise fail(f"{name} {value!r}: write a number of bytes, e.g. 2G, 500M or 1000000")
    return int(number)


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
