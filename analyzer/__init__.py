"""analyzer: what tokenization costs each language, measured on parallel text."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("analyzer")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
