"""The help screen's keys in words: a key's description, and where it applies when not in
every dashboard (`a` only under kltui ablate, `m` only under kltui monitor); `tui/bindings.py`
sets the place as the binding's tooltip, `tui/screens/help.py` shows the line."""

from __future__ import annotations

from enum import StrEnum


class OnlyIn(StrEnum):
    """The one kind of dashboard a key applies in."""

    ABLATE = "ablate"
    MONITOR = "monitor"


def only_in(kind: OnlyIn) -> str:
    """Where a key applies ("kltui ablate only")."""
    return f"kltui {kind.value} only"


def key_what(description: str, where: str | None) -> str:
    """A key's line in the help: what it does, and where it applies when not everywhere."""
    return f"{description} ({where})" if where else description
