"""Argument types shared by every command line (`kltui ...` and `kltui dumps`): each turns a bad
value into argparse's one-line usage error (exit 2) instead of a traceback."""

from __future__ import annotations

import argparse


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
