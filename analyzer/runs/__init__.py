"""Runs: train the shared and per-language vocabularies of a corpus, count every measured
unit at every size, and store it all atomically.

`execute_run(db, RunSettings(sizes=[512]))` is what `analyzer run --vocab 512` does.
"""

from analyzer.settings import EXECUTORS, RunSettings

from .execute import ResultsNotStored, execute_run
from .resolution import RunError, split_units
from .resolution import resolve as resolve_settings

__all__ = ["EXECUTORS", "ResultsNotStored", "RunError", "RunSettings", "execute_run",
           "resolve_settings", "split_units"]
