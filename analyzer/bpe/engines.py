"""Which engine runs: the compiled one when it was built, else the pure-Python one.

`ANALYZER_ENGINE=python` forces the pure engine; `ANALYZER_ENGINE=compiled` insists on the
compiled one (ImportError if it is missing). When the compiled engine is missing and nothing
was asked for, one line on stderr says so, once, and everything works on the pure engine with
the same results.
"""

from __future__ import annotations

import sys

from . import choice, pure
from .choice import ENGINE_ENV
from .contract import Engine


def _load() -> tuple[str, Engine, dict[str, Engine]]:
    wanted = choice.wanted()
    available: dict[str, Engine] = {"python": pure}
    try:
        from . import compiled

        available["compiled"] = compiled
    except ImportError as error:
        if wanted == "compiled":
            raise ImportError(f"{ENGINE_ENV}=compiled, but the compiled engine is not built "
                              f"({error}); reinstall with a C compiler: pip install -e .") from None
        if not wanted:
            sys.stderr.write("analyzer: the compiled BPE engine is not built (no C compiler at "
                             "install?); using the pure-Python engine: same results, slower\n")
    name = wanted or ("compiled" if "compiled" in available else "python")
    return name, available[name], available


ENGINE, engine, ENGINES = _load()
"""The active engine's name ("compiled" or "python") and module, and every engine available."""
