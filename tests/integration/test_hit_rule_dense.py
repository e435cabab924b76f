"""On a dense server (the reference server) the engine's hit rule is kl_test_utils' (issue 57):
the JSON says which rule counted, each request's count is recorded with its kind and figures,
the server's geometry is recorded as dense, and `--hit-rule kl_test_utils` counts the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.checkrun import check_run

SMALL = dict(samples=6, max_new_tokens=16, max_prompt_tokens=48)
CACHE_HELPERS = ("prefill_cache_hit", "decode_cache_hit")


@pytest.mark.parametrize("rule", ["engine", "kl_test_utils"])
async def test_dense_hits_are_counted_as_kl_test_utils_counts_them(
    reference_servers, tmp_path: Path, rule: str
):
    url = reference_servers.url(deterministic=True)
    rc, res, _ = await check_run(url, tmp_path, helpers=list(CACHE_HELPERS), hit_rule=rule, **SMALL)
    assert rc == 0
    assert res["config"]["hit_rule"] == rule
    (server,) = res["servers"]
    assert server["geometry"]["kind"] == "dense" and server["geometry"]["mamba"] is None
    kinds = {"prefill_cache_hit": "prefix", "decode_cache_hit": "decode_region"}
    for h in CACHE_HELPERS:
        entry = res["helpers"][h]
        assert entry["hit_rule"] == "kl_test_utils" and entry["hit_step"] is None
        counts = entry["cache_counts"]
        assert sorted(c["sample"] for c in counts) == list(range(6))
        assert {c["kind"] for c in counts} == {kinds[h]}, counts
        assert all(c["cached"] >= c["lower"] for c in counts)
        assert entry["hits"] == 6
