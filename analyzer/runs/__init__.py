"""Runs: train the shared and per-language vocabularies of a corpus, count every measured
unit at every size, and store it all atomically.

`execute_run(db, RunSettings(sizes=[512]))` is what `analyzer run --vocab 512` does.
"""

from .execute import ENGINE_VERSION, ResultsNotStored, execute_run, make_jobs
from .jobs import VocabularyJob, build_vocabulary, run_jobs
from .settings import ResolvedRun, RunError, RunSettings, resolve, split_units

__all__ = [
    "ENGINE_VERSION",
    "ResolvedRun",
    "ResultsNotStored",
    "RunError",
    "RunSettings",
    "VocabularyJob",
    "build_vocabulary",
    "execute_run",
    "make_jobs",
    "resolve",
    "run_jobs",
    "split_units",
]
