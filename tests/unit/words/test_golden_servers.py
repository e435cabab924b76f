"""A server in one line (`words/server_facts.server_summary`): a reachable SGLang server started
without a tokenizer (the fact `NO_TOKENIZER` that the header, the drill-down and the console
show) and an unreachable one; the views' tests assert the fact and that they show these words."""

from __future__ import annotations

from kltui.engines.identity import ServerIdentity
from kltui.words.server_facts import server_summary


def test_a_server_without_tokenizer():
    s = ServerIdentity.of({"url": "http://127.0.0.1:30000", "version": "0.5.23",
                           "model_path": "m", "tp_size": 1, "skip_tokenizer_init": True})  # fmt: skip
    assert server_summary(s) == (
        "http://127.0.0.1:30000 · sglang 0.5.23 · model m · tp 1 · dtype ? · attn ? · page ? · "
        "radix – · deterministic – · cuda graph – · no tokenizer (--skip-tokenizer-init)"
    )


def test_an_unreachable_server():
    s = ServerIdentity.of({"url": "http://10.0.0.9:30000", "error": "connection refused"})
    assert server_summary(s) == "http://10.0.0.9:30000: unreachable (connection refused)"
