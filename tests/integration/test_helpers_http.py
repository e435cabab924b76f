"""Every helper over real HTTP against the reference server: exact zeros in deterministic mode,
real rounding noise by default, and each planted fault caught only on its own path."""

from __future__ import annotations

import json
import math

import pytest

from kltui.readings.diagnosis import diagnose
from kltui.session.recording import read_recording
from kltui.session.store import SessionStore
from kltui.words.diagnosis import said
from tests.integration.checkrun import check_run

SMALL = dict(samples=8, max_new_tokens=24, max_prompt_tokens=64)


async def check(url: str, tmp_path, **kw) -> tuple[int, dict, str]:
    return await check_run(url, tmp_path, width=200, **{**SMALL, **kw})


async def test_deterministic_every_helper_exactly_zero(reference_servers, tmp_path):
    rc, res, text = await check(reference_servers.url(deterministic=True), tmp_path)
    assert rc == 0, text
    assert res["verdict"] == "pass"
    for name in ("match", "prefill_cache_hit", "decode_cache_hit"):
        h = res["helpers"][name]
        assert h["avg_kl_div"] == 0.0, (name, h)
        assert h["max_k3"] == 0.0
        assert h["scored"] + h["skipped"] == 8
        assert h["threshold"] == 1e-9  # the server reports enable_deterministic_inference
        assert all(p["first_divergence"] is None for p in h["per_sample"])
    assert res["helpers"]["prefill_cache_hit"]["hits"] > 4
    assert res["prompt_set"]["n"] == 8 and len(res["prompt_set"]["sha256"]) == 16


async def test_default_kernels_give_real_nonzero_noise(reference_servers, tmp_path):
    rc, res, text = await check(reference_servers.url(), tmp_path, helpers=["match"])
    h = res["helpers"]["match"]
    assert 0.0 < h["avg_kl_div"] < 1e-3, text
    assert math.isfinite(h["max_k3"])
    assert h["samples_with_difference"] > 0
    assert rc == 0 and h["passed"] is True


async def test_stale_prefix_shows_only_on_cache_hit_paths(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True, fault="stale-prefix")
    rc, res, text = await check(url, tmp_path, helpers=["match", "prefill_cache_hit"])
    assert res["helpers"]["match"]["avg_kl_div"] == 0.0
    assert res["helpers"]["prefill_cache_hit"]["avg_kl_div"] > 1e-9
    assert res["helpers"]["prefill_cache_hit"]["status"] == "fail"
    assert rc == 1 and res["verdict"] == "fail"
    store = SessionStore()
    for ev in read_recording(str(tmp_path / "r.jsonl")).events:
        store.apply(ev)
    (diag,) = diagnose(store)
    assert diag.conditions == [2] and "prefill_cache_hit" in said(diag).label


async def test_window_evict_shows_only_in_decode_cache_hit(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True, fault="window-evict")
    rc, res, _ = await check(url, tmp_path, max_new_tokens=96)
    assert res["helpers"]["match"]["avg_kl_div"] == 0.0
    assert res["helpers"]["prefill_cache_hit"]["avg_kl_div"] == 0.0
    assert res["helpers"]["decode_cache_hit"]["avg_kl_div"] > 1e-9
    assert rc == 1


async def test_streamed_and_non_streamed_agree_bitwise(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, a, _ = await check(url, tmp_path / "a", helpers=["match"], stream=True)
    _, b, _ = await check(url, tmp_path / "b", helpers=["match"], stream=False)
    sa = [(p["index"], p["n_tokens"], p["mean_k3"]) for p in a["helpers"]["match"]["per_sample"]]
    sb = [(p["index"], p["n_tokens"], p["mean_k3"]) for p in b["helpers"]["match"]["per_sample"]]
    assert sa == sb
    assert a["prompt_set"]["sha256"] == b["prompt_set"]["sha256"]


async def test_recording_replays_to_the_same_numbers(reference_servers, tmp_path):
    rc, res, _ = await check(reference_servers.url(), tmp_path, helpers=["match"])
    rec = read_recording(str(tmp_path / "r.jsonl"))
    assert rec.header["format"] == "kltui-recording" and not rec.truncated
    store = SessionStore()
    for ev in rec.events:
        store.apply(ev)
    st = next(iter(store.helpers.values()))
    replayed = st.book.summary(
        n_samples=st.n_samples, n_skipped=len(st.skipped), threshold=st.threshold
    )
    assert replayed["avg_kl_div"] == res["helpers"]["match"]["avg_kl_div"]
    kinds = {type(e).__name__ for e in rec.events}
    assert {
        "RunStarted",
        "HelperStarted",
        "PhaseChanged",
        "TokensDecoded",
        "SampleScored",
        "HelperFinished",
        "RunFinished",
    } <= kinds


async def test_prompt_file_of_token_ids_is_sent_as_is(reference_servers, tmp_path):
    ids = [[5, 17, 99, 300, 12, 44, 8, 61, 90, 7], [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]]
    (tmp_path / "p.json").write_text(json.dumps(ids))
    rc, res, _ = await check(
        reference_servers.url(deterministic=True),
        tmp_path,
        helpers=["match"],
        prompts=str(tmp_path / "p.json"),
        max_prompt_tokens=None,
    )
    assert res["prompt_set"]["n"] == 2 and res["prompt_set"]["tokens"] == 21
    assert [p["prompt_len"] for p in res["helpers"]["match"]["per_sample"]] == [10, 11]
    assert rc == 0


async def test_unreachable_server_is_exit_3_with_one_line(tmp_path):
    rc, res, text = await check("http://127.0.0.1:9", tmp_path)
    assert rc == 3 and res["verdict"] == "error"
    assert "127.0.0.1:9" in text and "Traceback" not in text
    assert res["problems"][0]["phase"] == "connect"


@pytest.mark.parametrize("temperature", [0.7])
async def test_temperature_outside_0_1_warns(reference_servers, tmp_path, temperature):
    rc, res, text = await check(
        reference_servers.url(deterministic=True),
        tmp_path,
        helpers=["match"],
        samples=2,
        temperature=temperature,
    )
    assert any("not 0 or 1" in p["message"] for p in res["problems"])


async def test_radix_cache_disabled_makes_cache_helpers_vacuous(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True, disable_radix_cache=True)
    rc, res, text = await check(url, tmp_path, samples=2)
    assert res["helpers"]["match"]["status"] == "pass"
    for name in ("prefill_cache_hit", "decode_cache_hit"):
        assert res["helpers"][name]["status"] == "vacuous", text
    assert rc == 1 and res["verdict"] == "fail"


async def test_cache_misses_are_skipped_and_too_few_hits_fail(reference_servers, tmp_path):
    # a page larger than any prompt: every radix match rounds down to zero cached tokens
    url = reference_servers.url(deterministic=True, page_size=512)
    rc, res, text = await check(url, tmp_path, helpers=["prefill_cache_hit"], samples=4)
    h = res["helpers"]["prefill_cache_hit"]
    assert h["skipped"] == 4 and h["scored"] == 0
    assert all("cache miss" in s["reason"] for s in h["skipped_samples"])
    assert h["hit_failure"] == "Too few prefill cache hits 0/4 (need > 2)"
    assert h["status"] == "fail" and rc == 1
