"""What `kltui web` says as it starts serving (`cli/web.py` prints it): the kltui command
line each browser tab runs."""

from __future__ import annotations

import shlex


def tab_runs(argv: list[str]) -> str:
    """The line naming the command each browser tab runs (`argv`: kltui's own arguments)."""
    return f"kltui web: each browser tab runs: kltui {shlex.join(argv)}"
