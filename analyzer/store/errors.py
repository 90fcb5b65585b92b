"""The store's error: a request the database cannot honour, said in words."""


class StoreError(ValueError):
    """A missing or conflicting name, or similar; the message says what there is instead."""
