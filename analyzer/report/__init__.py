"""Offline Plotly HTML reports: one page per run and an index of runs.

    write_report(db, run_id)            # reports/run-<id>.html, reports/index.html, plotly.js
"""

from .page import DEFAULT_OUT, Page, build_page, plotly_file_name, write_index, write_report

__all__ = ["DEFAULT_OUT", "Page", "build_page", "plotly_file_name", "write_index", "write_report"]
