"""`python -m analyzer` is the `analyzer` command."""

from analyzer.cli import app

app(prog_name="analyzer")
