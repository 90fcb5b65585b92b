"""Offline Plotly HTML reports: one page per run and an index of runs.

    write_report(db, run_id)            # reports/run-<id>.html, reports/index.html, plotly.js
"""

from typing import TYPE_CHECKING

from analyzer.lazy import lazy_names

if TYPE_CHECKING:
    from .files import DEFAULT_OUT, plotly_file_name
    from .page import build_page, write_report

__getattr__ = lazy_names(__name__, {".files": ("DEFAULT_OUT", "plotly_file_name"),
                                    ".page": ("build_page", "write_report")})

__all__ = ["DEFAULT_OUT", "build_page", "plotly_file_name", "write_report"]
