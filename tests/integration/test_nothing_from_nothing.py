"""Nothing from nothing (issue 28 item 4): a cache path that compared nothing, or too few of
its samples, is "not tested", never part of "bit-identical" or "conditions 1 and 2 hold", on a
real reference server with a planted state bug that those paths would have shown."""

import json
import os

import pytest

from kltui.readings.diagnosis_parts import NotTested, PageNote, PoolNote
from kltui.readings.findings import Finding
from tests.integration.checkrun import check_run, recorded_diagnoses


async def test_radix_off_is_not_conditions_hold(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True, fault="stale-prefix", disable_radix_cache=True)
    rc, doc, text = await check_run(url, tmp_path, samples=8, max_new_tokens=8)
    (d,) = doc["diagnosis"]
    assert d["condition"] is None and d["conditions"] == [], d["label"]
    # bit-identical where tested (match, 8 of 8), never "exact": the cache paths compared nothing
    assert d["finding"] == Finding.EXACT_WHERE_TESTED, d["finding"]
    assert doc["helpers"]["prefill_cache_hit"]["scored"] == 0
    assert "prefill_cache_hit" in d["rests_on"]["untested"]
    tested = {t["helper"]: (t["scored"], t["samples"]) for t in d["rests_on"]["tested"]}
    assert tested == {"match": (8, 8)}


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
    assert d["condition"] != 0 and d["finding"] != Finding.EXACT, d["label"]
    few = {h for h in ("prefill_cache_hit", "decode_cache_hit") if scored[h] < 4}
    assert few <= set(d["rests_on"]["untested"]), d["rests_on"]
    (diag,) = recorded_diagnoses(tmp_path)  # each one named as not tested, in the evidence
    assert few <= {e.helper for e in diag.evidence if isinstance(e, NotTested)}, diag.evidence


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
    assert rc != 0 and "decode_cache_hit" in d["rests_on"]["untested"], d["label"]
    (diag,) = recorded_diagnoses(tmp_path)
    # every skipped sample is the page rounding, as measured: the 16 short prompts (a page at
    # most) and all 32 first turns (whole pages, 8 new tokens: less than a page past the prompt)
    misses = {e.misses.helper: e.misses for e in diag.evidence if isinstance(e, PageNote)}
    assert misses.keys() == {"prefill_cache_hit", "decode_cache_hit"}, diag.evidence
    pre, dec = misses["prefill_cache_hit"], misses["decode_cache_hit"]
    assert (pre.n, pre.page) == (16, 16) and (dec.n, dec.page, dec.new_tokens) == (32, 16, 8)


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
    (diag,) = recorded_diagnoses(tmp_path)
    shorts = {e.short.helper: e.short for e in diag.evidence if isinstance(e, PoolNote)}
    short = shorts["decode_cache_hit"]  # the misses, beside the pool and what the hits needed
    assert (short.missed, short.samples) == (dec["skipped"], 8), short
    assert (short.pool_tokens, short.input_tokens) == (100, dec["hit_input_tokens"]), short
    assert d["finding"] != Finding.EXACT, d["label"]
