"""The one error of analyzer.external."""


class TokenizerError(ValueError):
    """A tokenizer that cannot be loaded or fetched; the message says what was tried, what was
    refused and why, and what to run or install."""
