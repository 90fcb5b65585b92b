"""Runs: train the vocabularies a run asks for, count every measured unit at every size, and
store it all atomically.

`execute_run(db, RunSettings(sizes=[512]))` is what `analyzer run --vocab 512` does: settings
resolved against the corpus (`resolution`), the jobs planned by the builders of each kind of
vocabulary (`builders`, on `plan`'s jobs), run on the local pool (`pool`) or a Dask cluster
(`cluster`), whichever `executor` picks, and the results stored (`execute`).
"""

from analyzer.settings import EXECUTORS, RunSettings

from .errors import RunError
from .execute import ResultsNotStored, execute_run
from .resolution import refusals, split_units
from .resolution import resolve as resolve_settings

__all__ = ["EXECUTORS", "ResultsNotStored", "RunError", "RunSettings", "execute_run",
           "refusals", "resolve_settings", "split_units"]
