"""Subcommands of this package (registered by charter.cli)."""


def register(sub) -> None:
    """No subcommands yet."""
