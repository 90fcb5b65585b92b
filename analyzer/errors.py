"""The one error model of analyzer: a base class, four kinds, and structured fields.

Every error the library raises for the input's or the situation's sake (never for a bug) is an
`AnalyzerError` of one kind:

- `Invalid`: input or settings that cannot be used (a corpus file, a setting's value);
- `NotFound`: no such corpus, run, vocabulary, unit or tokenizer;
- `Conflict`: the request meets a state that forbids it (a run that is not complete, a run
  already in progress, a name already taken);
- `Busy`: the situation, not the request (a database locked by another process, a full disk).

Each layer's errors (`CorpusError`, `StoreError`, `RunError`, ...) are subclasses of one kind,
so a caller catches a layer's or a kind's. An error carries what it is about as fields
(`setting`, `file`, `line`, `language`, `unit`, `value`), never only inside its message, so
nothing has to parse a message to find them.

Messages speak of settings by their library names (`RunSettings`' fields: `sizes`,
`pretokenizers`, ...), written `{setting}` for the error's own setting and `{setting:NAME}`
for another. Each face renders them once, in its own words: the command line with its flags
(`--vocab`), the service with its JSON fields (`sizes`).

>>> error = Invalid("{setting} 100 is below 256, the byte alphabet", setting="sizes", value=100)
>>> str(error)
'sizes 100 is below 256, the byte alphabet'
>>> error.render({"sizes": "--vocab"}.get)
'--vocab 100 is below 256, the byte alphabet'
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from typing import Any

SETTING = "{setting}"
"""Where a message names the error's own setting: f"{SETTING} {value} is below 256"."""

_NAMED = re.compile(r"\{setting(?::(\w+))?\}")


def setting(name: str) -> str:
    """Where a message names another setting: f"add {setting('parity')}"."""
    return f"{{setting:{name}}}"


class AnalyzerError(Exception):
    """An error of the input's or the situation's: its message says what and where, its fields
    say it again for programs."""

    lines = False
    """Its message is lines of its own, each short enough for 80 columns (a long refusal
    with a list of ways out): a face prints its line breaks as line breaks."""

    def __init__(self, message: str, *, setting: str | None = None, file: str | None = None,
                 line: int | None = None, language: str | None = None, unit: int | None = None,
                 value: Any = None):
        super().__init__(message)
        self.message = message
        self.setting = setting
        """The setting at fault, by its library name (a `RunSettings` field, ...)."""
        self.file, self.line = file, line
        """The input file at fault, and its line (1-based), when there is one."""
        self.language, self.unit = language, unit
        """The language, and the unit (1-based), at fault, when there are."""
        self.value = value
        """The value refused, when there is one."""

    def render(self, names: Callable[[str], str | None] | None = None) -> str:
        """The message, each setting called what `names(setting)` calls it (a face's own name
        for it: a flag, a JSON field), else its library name."""
        def name(match: re.Match) -> str:
            named = match.group(1) or self.setting or "setting"
            return (names(named) if names else None) or named
        return _NAMED.sub(name, self.message)

    def __str__(self) -> str:
        return self.render()

    def __reduce__(self):
        # Pickled whole (fields and all), as when a run's process sends its error to the service.
        return _rebuild, (type(self), self.message, self._all_fields())

    def _all_fields(self) -> dict[str, Any]:
        return {"setting": self.setting, "file": self.file, "line": self.line,
                "language": self.language, "unit": self.unit, "value": self.value}

    def renamed(self, old: str, new: str) -> AnalyzerError:
        """The same error with the path `old` called `new` in its message and `file` (a
        temporary folder called what the user gave: an archive, an upload's name).

        >>> str(Invalid("/tmp/x1/eng.txt:3: empty", file="/tmp/x1/eng.txt").renamed("/tmp/x1", "c.zip"))
        'c.zip/eng.txt:3: empty'

        Only the whole path: not the start of a longer name, nor the end of a longer path.

        >>> str(Invalid("/tmp/x10/a and /srv/tmp/x1/b, not /tmp/x1.").renamed("/tmp/x1", "c.zip"))
        '/tmp/x10/a and /srv/tmp/x1/b, not c.zip.'
        """
        whole = re.compile(rf"(?<![\w.\-/]){re.escape(old)}(?![\w\-]|\.[\w\-])")
        return self.rewritten(lambda text: whole.sub(lambda _: new, text))

    def rewritten(self, change: Callable[[str], str]) -> AnalyzerError:
        """The same error with `change` made to its message and its `file` (paths called as
        a reader elsewhere may see them).

        >>> str(Invalid("/tmp/x1/eng.txt: empty").rewritten(str.upper))
        '/TMP/X1/ENG.TXT: EMPTY'
        """
        fields = self._all_fields()
        if fields["file"] is not None:
            fields["file"] = change(str(fields["file"]))
        return type(self)(change(self.message), **fields)

    def fields(self) -> dict[str, Any]:
        """The structured fields that are set (for a program: the service's problem details)."""
        return {key: value for key, value in self._all_fields().items() if value is not None}


def _rebuild(kind: type[AnalyzerError], message: str, fields: dict[str, Any]) -> AnalyzerError:
    return kind(message, **fields)


class Invalid(AnalyzerError):
    """Input or settings that cannot be used."""


class NotFound(AnalyzerError):
    """No such thing (the message lists what there is)."""


class Conflict(AnalyzerError):
    """The request meets a state that forbids it."""


class Busy(AnalyzerError):
    """The situation, not the request: try again once it has changed."""

    retry_after = 5
    """Seconds a client should wait before it tries again (a server sends it as `Retry-After`)."""


KINDS: tuple[type[AnalyzerError], ...] = (Invalid, NotFound, Conflict, Busy)
"""The kinds, which every face maps to its own terms (exit codes, HTTP statuses) in one place."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`; did you mean X?` for a name close to known ones (a typo, or the start of several
    names: `mistral` for mistral-v1, mistral-v3 and mistral-tekken), else "".

    >>> did_you_mean("lama3", ["llama3", "llama4", "gpt2"])
    '; did you mean llama3?'
    >>> did_you_mean("mistral", ["mistral-v1", "mistral-v3", "mistral-tekken", "gpt2"])
    '; did you mean mistral-v1, mistral-v3 or mistral-tekken?'
    >>> did_you_mean("harbor", ["harbour_town"]), did_you_mean("zzz", ["gpt2"])
    ('; did you mean harbour_town?', '')
    """
    names = list(dict.fromkeys(known))
    lowered = name.casefold()
    close = [known_name for known_name in names if known_name.casefold() == lowered]
    close = close or [known_name for known_name in names
                      if len(lowered) >= 3 and known_name.casefold().startswith(lowered)]
    close = close or difflib.get_close_matches(name, names, n=3, cutoff=0.75)
    close = close or difflib.get_close_matches(name, names, n=1, cutoff=0.6)  # the one nearest
    if not close:
        return ""
    said = close[0] if len(close) == 1 else f"{', '.join(close[:-1])} or {close[-1]}"
    return f"; did you mean {said}?"
