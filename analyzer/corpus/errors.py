"""The one error the corpus layer raises: its message names the file, line or value at fault,
and so do its fields (`file`, `line`, `language`, `unit`)."""

from analyzer.errors import Invalid


class CorpusError(Invalid):
    """Input that cannot become an aligned corpus; the message says where and why."""
