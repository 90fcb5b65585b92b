"""Runs: train the shared and per-language vocabularies of a corpus, count every measured
unit at every size, and store it all atomically.

`execute_run(db, RunSettings(sizes=[512]))` is what `analyzer run --vocab 512` does.
"""

from analyzer.settings import EXECUTORS, RunSettings

from .execute import ResultsNotStored, execute_run
from .extension import BASE_PRETOKENIZER, EXTENSION_PREFIX, extension_scope
from .resolution import RunError, split_units
from .resolution import resolve as resolve_settings

__all__ = ["BASE_PRETOKENIZER", "EXECUTORS", "EXTENSION_PREFIX", "ResultsNotStored", "RunError",
           "RunSettings", "execute_run", "extension_scope", "resolve_settings", "split_units"]
