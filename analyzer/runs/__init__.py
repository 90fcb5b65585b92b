"""Runs: train the shared and per-language vocabularies of a corpus, count every measured
unit at every size, and store it all atomically.

`execute_run(db, RunSettings(sizes=[512]))` is what `analyzer run --vocab 512` does.
"""

from .execute import ResultsNotStored, execute_run
from .settings import RunError, RunSettings, split_units

__all__ = ["ResultsNotStored", "RunError", "RunSettings", "execute_run", "split_units"]
