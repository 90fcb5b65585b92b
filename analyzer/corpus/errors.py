"""The one error the corpus layer raises: its message names the file, line or value at fault."""


class CorpusError(ValueError):
    """Input that cannot become an aligned corpus; the message says where and why."""
