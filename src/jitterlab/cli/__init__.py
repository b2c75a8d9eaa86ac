"""The command line, one thin module per command group."""

from jitterlab.cli.main import main

__all__ = ["main"]
