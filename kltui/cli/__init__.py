"""The `kltui` command line: argument parsing and dispatch (`commands`), `kltui report` (`report`)."""

from kltui.cli.commands import main

__all__ = ["main"]
