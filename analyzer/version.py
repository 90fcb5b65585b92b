"""The analyzer's version, as installed: read from its metadata when first asked for
(`analyzer.__version__`), so that `import analyzer` and `analyzer --help` do not read it."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("analyzer")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
