"""The runs layer's error: settings no run can honour, or a job that failed."""

from __future__ import annotations

from analyzer.errors import Invalid


class RunError(Invalid):
    """Settings no run can honour; the message says which value and what would do, and
    `setting` names it."""
