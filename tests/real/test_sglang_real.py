"""kltui against real SGLang 0.5.23: the three helpers (numbers equal SGLang's own
compare_kl_divergence on the same arrays), both streaming modes, an API key, and /flush_cache
refusing while the server is busy."""

from __future__ import annotations

import asyncio

import httpx
import numpy as np
import pytest

from kltui.engines.errors import EngineError, FlushBusy
from kltui.engines.sglang import SGLangClient, sampling_params
from kltui.engines.sglang_parse import Delta
from kltui.engines.sglang_request import LogprobAsk
from kltui.run.config import RunConfig
from kltui.run.runner import run_session
from kltui.session.events import HelperFinished, Problem, RunFinished, SampleScored, TokensDecoded

from .conftest import API_KEY, sglang_compare_kl

HELPERS = ["match", "prefill_cache_hit", "decode_cache_hit"]


def small_config(url: str, **kw) -> RunConfig:
    # Small on purpose: 4 samples of <= 72 prompt tokens, 16 new tokens, so that the whole tier
    # stays at minutes on a 2-core machine; the arithmetic compared is the same at any size.
    base = dict(servers=[url], helpers=list(HELPERS), samples=4, max_new_tokens=16)
    base.update(max_prompt_tokens=48, seed=0)
    base.update(kw)
    return RunConfig(**base)


async def collect(cfg: RunConfig) -> list:
    return [ev async for ev in run_session(cfg)]


def by_helper(events: list) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for ev in events:
        if isinstance(ev, SampleScored):
            out.setdefault(ev.helper, {"scored": [], "summary": None})["scored"].append(ev)
        elif isinstance(ev, HelperFinished):
            out.setdefault(ev.helper, {"scored": [], "summary": None})["summary"] = ev.summary
    return out


@pytest.fixture(scope="module")
def default_run(sglang_url) -> list:
    return asyncio.run(collect(small_config(sglang_url)))


def test_all_three_helpers_pass_on_real_sglang(default_run):
    problems = [ev for ev in default_run if isinstance(ev, Problem)]
    assert not [p for p in problems if p.fatal], problems
    helpers = by_helper(default_run)
    assert sorted(helpers) == sorted(HELPERS)
    for name, h in helpers.items():
        s = h["summary"]
        assert s["status"] == "pass", (name, s)
        assert s["scored"] >= 2, (name, s)  # cache-hit helpers may skip a miss, not most
        # real SGLang on CPU in float32: prefill and decode agree to rounding
        assert s["avg_kl_div"] < 1e-9, (name, s["avg_kl_div"])
    assert default_run[-1].verdict == "pass"


@pytest.fixture(scope="module")
def sglang_numbers(default_run) -> dict:
    helpers = by_helper(default_run)
    return sglang_compare_kl(
        {
            name: (
                [ev.lp_a.tolist() for ev in h["scored"]],
                [ev.lp_b.tolist() for ev in h["scored"]],
            )
            for name, h in helpers.items()
        }
    )


@pytest.mark.parametrize("helper", HELPERS)
def test_kltui_numbers_equal_sglang_compare_kl_divergence(default_run, sglang_numbers, helper):
    h = by_helper(default_run)[helper]
    kl_divs, avg = sglang_numbers[helper]
    per_sample = {p["index"]: p["mean_k3"] for p in h["summary"]["per_sample"]}
    # bit for bit: the same arrays through the same arithmetic
    assert [per_sample[ev.sample] for ev in h["scored"]] == kl_divs
    assert h["summary"]["avg_kl_div"] == avg


def test_side_a_replays_the_decoded_tokens(default_run):
    # TokensDecoded (the live stream) and SampleScored (the replay) must be about the same ids
    decoded: dict[tuple[str, int], list[int]] = {}
    for ev in default_run:
        if isinstance(ev, TokensDecoded):
            decoded.setdefault((ev.helper, ev.sample), []).extend(ev.token_ids.tolist())
    for ev in default_run:
        if isinstance(ev, SampleScored):
            assert decoded[(ev.helper, ev.sample)] == ev.token_ids.tolist()


async def test_streaming_modes_give_the_same_tokens(sglang_url, sglang_incremental_key_url):
    """Cumulative chunks (default) and deltas (--incremental-streaming-output) assemble to the
    same greedy tokens and logprobs as a non-streamed request."""
    prompts = [np.array([0, 43, 587, 82, 15, 428, 390]), np.array([0, 324, 263, 276])]
    sp = sampling_params(temperature=0.0, max_new_tokens=24, ignore_eos=True)
    results = {}
    for name, url, key, incremental in (
        ("cumulative", sglang_url, None, False),
        ("incremental", sglang_incremental_key_url, API_KEY, True),
    ):
        async with SGLangClient(url, key) as c:
            info = await c.server_info()
            assert info["incremental_streaming_output"] is incremental
            # Cold prefills on both requests: a radix hit would recompute the first token's
            # logprob from a cached prefix and differ in the last bits.
            await c.flush_cache()
            deltas: dict[int, list[int]] = {}
            final = None
            async for item in c.generate_stream(prompts, sp, LogprobAsk(), incremental=incremental):
                if isinstance(item, Delta):
                    assert item.start == len(deltas.get(item.index, []))
                    deltas.setdefault(item.index, []).extend(item.token_ids.tolist())
                else:
                    final = item
            await c.flush_cache()
            plain = await c.generate(prompts, sp, LogprobAsk())
        assert final is not None
        for r, p in zip(final, plain, strict=True):
            assert deltas[r.index] == r.output_ids.tolist() == p.output_ids.tolist()
            np.testing.assert_array_equal(r.output_logprobs, p.output_logprobs)
        results[name] = final
    # same weights, same kernels: both servers decode the same greedy tokens
    for a, b in zip(results["cumulative"], results["incremental"], strict=True):
        assert a.output_ids.tolist() == b.output_ids.tolist()


async def test_helpers_stream_deltas_from_an_incremental_server(sglang_incremental_key_url):
    cfg = small_config(
        sglang_incremental_key_url, helpers=["match"], samples=3, api_key=API_KEY, stream=True
    )
    events = await collect(cfg)
    assert events[-1].verdict == "pass", [e for e in events if isinstance(e, Problem)]
    assert any(isinstance(e, TokensDecoded) and e.start > 0 for e in events)


async def test_api_key_is_required_and_used(sglang_incremental_key_url):
    async with SGLangClient(sglang_incremental_key_url) as c:
        with pytest.raises(EngineError) as ei:
            await c.generate([[0, 5, 6]], sampling_params(max_new_tokens=1, temperature=0.0))
    assert ei.value.kind in ("http-401", "http-403")
    events = await collect(small_config(sglang_incremental_key_url, helpers=["match"], samples=2))
    fatal = [e for e in events if isinstance(e, Problem) and e.fatal]
    assert fatal and isinstance(events[-1], RunFinished) and events[-1].verdict == "error"
    assert API_KEY not in repr(events)
    good = await collect(
        small_config(sglang_incremental_key_url, helpers=["match"], samples=2, api_key=API_KEY)
    )
    assert good[-1].verdict == "pass"


async def test_flush_cache_answers_400_while_busy(sglang_url):
    body = {
        "input_ids": [[0, 43, 587, 82, 15, 428, 390]] * 4,
        "sampling_params": {"temperature": 0.0, "max_new_tokens": 480, "ignore_eos": True},
        "stream": True,
    }
    async with (
        httpx.AsyncClient(base_url=sglang_url, timeout=300) as raw,
        SGLangClient(sglang_url) as c,
    ):
        c.flush_attempts = 1  # one answer, not the client's retry-until-idle
        async with raw.stream("POST", "/generate", json=body) as resp:
            lines = resp.aiter_lines()
            while not (await anext(lines)).startswith("data:"):
                pass  # the first event proves the batch is running
            with pytest.raises(FlushBusy) as ei:
                await c.flush_cache(timeout_s=0)
        # leaving the stream disconnects, and SGLang aborts the request
        assert ei.value.kind == "flush-busy" and "busy" in ei.value.message
        await c.flush_cache(timeout_s=60)  # idle again: the flush goes through


async def test_extras_window_request_scores_exactly_the_window(sglang_url):
    """The drill-down's extras request (helpers/extras.py) on real SGLang: input cut at the
    window's end, logprob_start_len one before its start, one item per window in a batch; the
    entries after SGLang's logprob-less first one score exactly the window's tokens, each with
    its top-k and text."""
    async with SGLangClient(sglang_url) as c:
        (prompt,) = await c.tokenize(["The quick brown fox jumps over the lazy dog. " * 3])
        sp = sampling_params(max_new_tokens=12, temperature=0.0, ignore_eos=True)
        (gen,) = await c.generate([prompt], sp, LogprobAsk(logprob_start_len=-1))
        full = np.concatenate([prompt, gen.output_ids])
        p = prompt.size
        windows = [(0, 5), (4, 12)]
        batch = [full[: p + hi] for _, hi in windows]
        res = await c.generate(
            batch,
            sampling_params(max_new_tokens=0, temperature=0.0, ignore_eos=True),
            LogprobAsk(
                logprob_start_len=[p + lo - 1 for lo, _ in windows],
                top_logprobs_num=5,
                return_text_in_logprobs=True,
            ),
        )
    for (lo, hi), r in zip(windows, res, strict=True):
        assert np.isnan(r.input_logprobs[0])
        assert r.input_logprob_ids[1:].tolist() == gen.output_ids[lo:hi].tolist()
        assert len(r.input_top) == hi - lo + 1 and all(len(t) == 5 for t in r.input_top[1:])
        assert r.input_texts is not None and len(r.input_texts) == hi - lo + 1
        assert r.input_top_texts  # the alternatives' text, for the drill-down
