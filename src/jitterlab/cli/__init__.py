"""The command line, one thin module per command group."""


def main(argv: list[str] | None = None) -> int:
    """``jitterlab``: imports the command line only when called (a fast ``--version``)."""
    from jitterlab.cli.main import main as run

    return run(argv)


__all__ = ["main"]
