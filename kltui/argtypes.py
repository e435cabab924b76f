"""Argument types shared by every command line (`kltui ...` and `kltui dumps`): each turns a bad
value into a one-line usage error (exit 2) instead of a traceback, printed by `KltuiParser`."""

from __future__ import annotations

import argparse
from typing import NoReturn


class KltuiParser(argparse.ArgumentParser):
    """An argument parser whose usage errors print the message first, then a one-line hint."""

    def error(self, message: str) -> NoReturn:
        """Exit 2 with `PROG: error: MESSAGE` and where the full usage is, not the whole usage."""
        # argparse prints every option's usage before the message, burying the one line that
        # matters; `--help` still prints all of it
        self.exit(2, f"{self.prog}: error: {message}\n(`{self.prog} --help` lists the options)\n")


def number(s: str) -> float:
    """A float, or a usage error naming the value."""
    try:
        return float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None


def pos_int(s: str) -> int:
    """An integer > 0, or a usage error naming the value."""
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {s!r}")
    return v


def nonneg_int(s: str) -> int:
    """An integer >= 0, or a usage error naming the value."""
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {s!r}")
    return v
