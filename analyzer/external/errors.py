"""The errors of analyzer.external, of the kinds of `analyzer.errors`."""

from analyzer.errors import Invalid, NotFound


class TokenizerError(Invalid):
    """A tokenizer that cannot be loaded or fetched; the message says what was tried, what was
    refused and why, and what to run or install."""


class UnknownTokenizer(TokenizerError, NotFound):
    """A name that is not in the catalog (the message lists what is)."""
