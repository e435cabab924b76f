"""Nothing from nothing (issue 28 item 4): a cache path that compared nothing, or too few of
its samples, is "not tested", never part of "bit-identical" or "conditions 1 and 2 hold", on a
real reference server with a planted state bug that those paths would have shown."""

import json
import os

import pytest

from tests.integration.checkrun import check_run


async def test_radix_off_is_not_conditions_hold(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True, fault="stale-prefix", disable_radix_cache=True)
    rc, doc, text = await check_run(url, tmp_path, samples=8, max_new_tokens=8)
    (d,) = doc["diagnosis"]
    assert d["condition"] is None and d["conditions"] == [], d["label"]
    assert "conditions 1 and 2 hold" not in d["label"]
    assert "prefill_cache_hit not tested (ran but compared nothing" in d["label"]
    assert "match 8/8" in d["label"]


@pytest.fixture
def skip_hit_assert():
    os.environ["SGLANG_TEST_SKIP_CACHE_HIT_ASSERT"] = "1"
    yield
    del os.environ["SGLANG_TEST_SKIP_CACHE_HIT_ASSERT"]


async def test_a_tiny_kv_pool_with_the_hit_assert_skipped_is_not_tested(
    reference_servers, tmp_path, skip_hit_assert
):
    """The pool holds one prompt at a time: the decode's warm prefix is evicted for all but a
    few samples, and SGLANG_TEST_SKIP_CACHE_HIT_ASSERT lets the helpers pass on them."""
    srv = reference_servers.own(
        deterministic=True, fault="stale-prefix", extra_args=("--max-total-tokens", "120")
    )
    rc, doc, text = await check_run(srv.url, tmp_path, samples=8, max_new_tokens=8)
    scored = {h: v["scored"] for h, v in doc["helpers"].items()}
    assert min(scored["prefill_cache_hit"], scored["decode_cache_hit"]) < 4, scored
    (d,) = doc["diagnosis"]
    assert d["condition"] != 0 and "conditions 1 and 2 hold" not in d["label"], d["label"]
    assert "samples scored (at least 4 needed" in " ".join(d["evidence"]), d["evidence"]


async def test_page_rounded_misses_are_explained_from_what_they_measured(
    reference_servers, tmp_path
):
    """A page-16 server, prompts of 5 and 40 ids, 8 new tokens: the 5-id prompts leave no
    whole page to hit (prefill_cache_hit fails its gate on 16/32) and no first turn reaches a
    page past its prompt (decode_cache_hit scores nothing). The reading names both causes from
    the skipped requests' cached_tokens and input lengths, and the fix."""
    ids = tmp_path / "ids.json"
    lengths = [5] * 16 + [40] * 16
    ids.write_text(
        json.dumps([[3 + (i * 37 + j * 11) % 900 for j in range(n)] for i, n in enumerate(lengths)])
    )
    url = reference_servers.url(deterministic=True, page_size=16)
    rc, doc, text = await check_run(
        url, tmp_path, samples=32, max_new_tokens=8, prompts=str(ids), max_prompt_tokens=None
    )
    (d,) = doc["diagnosis"]
    assert rc != 0 and "decode_cache_hit not tested" in d["label"], d["label"]
    ev = "\n".join(d["evidence"])
    assert "prefill_cache_hit: all 16 skipped samples have prompts of at most 16 tokens" in ev, ev
    assert "decode_cache_hit: all 32 skipped samples hit whole 16-token pages" in ev, ev
    assert "--max-new-tokens 32 (twice the page size)" in ev


async def test_misses_under_a_kv_pool_smaller_than_the_hits_inputs_name_the_pool(
    reference_servers, tmp_path
):
    """A deterministic server whose KV pool (100 tokens) holds less than the 8 first turns
    warmed before decode_cache_hit's first hit: most samples miss, and the reading names the
    pool the server reported, the tokens the hits needed, and what tests the path; the JSON
    keeps both figures for each cache helper."""
    srv = reference_servers.own(deterministic=True, extra_args=("--max-total-tokens", "100"))
    rc, doc, text = await check_run(srv.url, tmp_path, samples=8, max_new_tokens=8)
    dec = doc["helpers"]["decode_cache_hit"]
    assert dec["kv_pool_tokens"] == 100 and dec["hit_input_tokens"] > 100, dec
    assert dec["skipped"] > 0, dec
    pre = doc["helpers"]["prefill_cache_hit"]
    assert pre["kv_pool_tokens"] == 100 and pre["hit_input_tokens"] > 100, pre
    (d,) = doc["diagnosis"]
    ev = "\n".join(d["evidence"])
    assert (
        f"decode_cache_hit: {dec['skipped']} of 8 samples missed their hit, and the 8 hit "
        f"requests' inputs hold {dec['hit_input_tokens']:,} tokens where the server's KV pool "
        "holds 100 (max_total_num_tokens)"
    ) in ev, ev
    assert "conditions 1 and 2 hold" not in d["label"], d["label"]
