"""A server's facts in words: the golden fact the one-line summary of a server started with
--skip-tokenizer-init adds (the tests that read a server's facts compare with
`session/servers.NO_TOKENIZER`), and an hf: reference's setting left to its default
(`words/server_facts.hf_fact`; tests/unit/session/test_hf_server_line.py asserts the kinds)."""

from __future__ import annotations

from kltui.session.servers import NO_TOKENIZER, HfDefault
from kltui.words.server_facts import hf_fact


def test_the_fact():
    assert NO_TOKENIZER == "no tokenizer (--skip-tokenizer-init)"


def test_an_hf_reference_setting_left_to_its_default():
    assert hf_fact("device", HfDefault.DEVICE) == "device cuda when available, else cpu"
    assert hf_fact("attn_implementation", HfDefault.ATTN) == (
        "attn_implementation transformers' default (sdpa)"
    )
    assert hf_fact("dtype", HfDefault.DTYPE) == "dtype the server's, else the checkpoint's"
    assert hf_fact("batch_size", None) == "batch_size ?"  # neither known nor defaulted
    assert hf_fact("device", "cpu") == "device cpu"
