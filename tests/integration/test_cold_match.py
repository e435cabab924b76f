"""match must run cold (issue 28 item 5): a server that ignores /flush_cache leaves the
previous run's KV in its radix cache, match's decode then hits it, and kltui says the server
did not flush instead of reading a cache path as kernel noise."""

import numpy as np

from kltui.engines.sglang_parse import GenResult
from kltui.helpers.match import not_cold, shared_prefix
from tests.flushless import FlushlessProxy
from tests.integration.checkrun import check_run


def _gen(cached: int) -> GenResult:
    empty = np.zeros(0)
    return GenResult(0, np.zeros(0, np.int64), empty, empty, np.zeros(0, np.int64), cached, 0, None)


def test_shared_prefix_is_the_longest_prefix_shared_with_any_other_prompt():
    prompts = [np.array([1, 2, 3, 4]), np.array([9, 9]), np.array([1, 2, 7]), np.array([1, 2, 3])]
    assert shared_prefix(prompts).tolist() == [3, 0, 2, 3]


def test_a_hit_within_what_prompts_share_is_cold_and_beyond_it_is_not():
    prompts = [np.array([1, 2, 3, 4]), np.array([1, 2, 3, 5])]
    assert not_cold(prompts, [(0, prompts[0], _gen(3)), (1, prompts[1], _gen(0))]) == ""
    why = not_cold(prompts, [(0, prompts[0], _gen(4)), (1, prompts[1], _gen(0))])
    assert "did not flush" in why and "sample 0: cached_tokens=4" in why


async def test_a_server_that_ignores_the_flush_makes_match_invalid(reference_servers, tmp_path):
    srv = reference_servers.own()
    with FlushlessProxy(srv.url) as url:
        # kltui's own tokenize requests (/generate, max_new_tokens 0) warm the cache that the
        # swallowed flush should have emptied, so even a first run's match is not cold
        cfg = {"helpers": ["match"], "samples": 4, "max_new_tokens": 4}
        rc, second, text = await check_run(url, tmp_path, **cfg)
    match = second["helpers"]["match"]
    assert match["status"] == "invalid", match
    assert "did not flush" in match["reason"]
    assert "did not flush" in " ".join(text.split())
    d = second["diagnosis"][0]
    assert d["condition"] is None, d
    assert "match" in d["label"] and "kernel" not in d["label"].split("match")[0]
