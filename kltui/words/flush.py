"""Why the TUI asks before the first flush of a server, in words (`run/flush_gate.py` decides:
a server off loopback, or busy with another client's requests); the question screen
(`tui/screens/confirm_flush.py`) shows it."""

from __future__ import annotations

from collections.abc import Iterable

from kltui.run.flush_gate import AskKind, AskReason


def ask_reason(r: AskReason) -> str:
    """One reason to ask, as the question's "Why ask:" says it."""
    if r.kind is AskKind.BUSY:
        return (
            f"it reports {r.requests} request(s) running or waiting ({r.route}), "
            "so another client is using it now"
        )
    return "it is not on a loopback address, so other clients may be using it"


def ask_reasons(reasons: Iterable[AskReason]) -> str:
    """Every reason to ask, in one clause."""
    return "; ".join(ask_reason(r) for r in reasons)
