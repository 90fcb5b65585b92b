"""`python -m analyzer` is the `analyzer` command."""

from analyzer.cli import main

main()
