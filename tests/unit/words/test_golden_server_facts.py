"""A server started with --skip-tokenizer-init, in words: the golden fact its one-line summary
adds; the tests that read a server's facts compare with `session/servers.NO_TOKENIZER`."""

from __future__ import annotations

from kltui.session.servers import NO_TOKENIZER


def test_the_fact():
    assert NO_TOKENIZER == "no tokenizer (--skip-tokenizer-init)"
