"""Why the TUI asks before the first flush, in words (`words/flush.py`): one golden text per
kind, and both at once; tests/tui/test_confirm_flush.py asserts the kinds and that this text is
what the question shows."""

from __future__ import annotations

from kltui.run.flush_gate import AskKind, AskReason
from kltui.words.flush import ask_reason, ask_reasons

SHARED = AskReason(AskKind.SHARED_HOST)
BUSY = AskReason(AskKind.BUSY, 4, "/v1/loads")


def test_each_reason():
    assert ask_reason(SHARED) == "it is not on a loopback address, so other clients may be using it"
    assert ask_reason(BUSY) == (
        "it reports 4 request(s) running or waiting (/v1/loads), so another client is using it now"
    )


def test_both_reasons_in_one_clause():
    assert ask_reasons((SHARED, BUSY)) == (
        "it is not on a loopback address, so other clients may be using it; it reports 4 "
        "request(s) running or waiting (/v1/loads), so another client is using it now"
    )
