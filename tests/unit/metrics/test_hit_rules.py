"""Cache hits counted as SGLang's kits count them (metrics/hit_rules.py), on the numbers real
SGLang 0.5.17 gave on the Qwen3-Next shape (../shared/gpu_sglang/README.md, "Hybrid models"):
decode_cache_hit's turn 2 cached 320 after a 358-token prompt and 128 new tokens at track interval
256; prefill_cache_hit cached 448 for 482 tokens, 873 for 881, and 0 for 384 and 832 at chunk 64.
The rules are kl_multiturn_utils 0.5.23's make_mamba_prefill_assert / make_mamba_decode_assert
(max_checkpoint_lag 0) and kl_test_utils 0.5.23's."""

import numpy as np
import pytest

from kltui.engines.geometry import MambaState, MambaStrategy, Source, Sourced, StateGeometry
from kltui.engines.sglang import SGLangClient
from kltui.engines.sglang_parse import GenResult
from kltui.helpers.cache_hit import _decode_miss, _prefill_miss
from kltui.helpers.context import HelperContext
from kltui.helpers.phases import Run
from kltui.metrics.hit_rules import (
    CountedBy,
    HitKind,
    HitRule,
    MissKind,
    decode_count,
    mamba_decode_floor,
    mamba_prefill_range,
    prefill_count,
)


def test_the_decode_checkpoint_real_sglang_restored_is_a_hit():
    assert mamba_decode_floor(358, 128, 256) == 256
    c = decode_count(320, 358, 128, 256)
    assert c.hit and c.kind is HitKind.CHECKPOINT and c.counted_by is CountedBy.MAMBA_DECODE
    assert (c.cached, c.length, c.lower, c.upper, c.step) == (320, 486, 256, None, 256)
    # kl_test_utils' rule calls the same request a miss: 320 <= 358 + 1
    old = decode_count(320, 358, 128, None)
    assert not old.hit and old.kind is MissKind.BEFORE_DECODE_REGION and old.lower == 360


def test_768_after_743_is_a_hit_too():
    assert decode_count(768, 743, 128, 256).kind is HitKind.CHECKPOINT


def test_below_the_decode_floor_is_a_miss():
    c = decode_count(255, 358, 128, 256)
    assert not c.hit and c.kind is MissKind.BELOW_CHECKPOINT


def test_no_decode_checkpoint_due_is_accepted_as_sglang_accepts_it():
    c = decode_count(0, 100, 100, 256)
    assert c.hit and c.kind is HitKind.NONE_DUE and c.lower == 0
    assert mamba_decode_floor(300, 0, 256) == 300  # no output: the whole history


def test_prefill_hits_on_chunk_boundaries():
    c = prefill_count(448, 482, 64)
    assert c.hit and c.kind is HitKind.CHECKPOINT
    assert (c.lower, c.upper) == mamba_prefill_range(482, 64) == (384, 448)


def test_873_for_881_is_past_the_last_chunk_boundary():
    # real SGLang's 873 for 881 is no multiple of 64: make_mamba_prefill_assert(64) accepts at
    # most 881 // 64 * 64 = 832, so SGLang's own rule rejects it too
    c = prefill_count(873, 881, 64)
    assert not c.hit and c.kind is MissKind.PAST_CHECKPOINT and c.upper == 832


@pytest.mark.parametrize("prompt", [384, 832])
def test_a_prompt_that_is_a_multiple_of_the_chunk_misses_with_its_reason(prompt):
    c = prefill_count(0, prompt, 64)
    assert not c.hit and c.kind is MissKind.CHUNK_MULTIPLE
    assert (c.lower, c.upper, c.step) == (prompt - 64, prompt, 64)


def test_kl_test_utils_prefill_rule():
    assert prefill_count(448, 482, None).kind is HitKind.PREFIX
    assert prefill_count(0, 384, None).kind is MissKind.NO_PREFIX


def _ctx(geometry: StateGeometry, rule: HitRule = HitRule.ENGINE) -> HelperContext:
    prompts = [np.arange(358), np.arange(384)]
    ctx = HelperContext(
        client=SGLangClient("http://127.0.0.1:9"), prompts=prompts, geometry=geometry
    )
    ctx.hit_rule, ctx.comma_ids = rule, np.array([11])
    return ctx


MAMBA = StateGeometry(
    mamba=MambaState(
        MambaStrategy.EXTRA_BUFFER,
        Source.SERVER_INFO,
        Sourced(256, Source.SERVER_INFO),
        Sourced(64, Source.DEFAULT),
    )
)


def _result(cached: int) -> GenResult:
    none = np.zeros(0)
    return GenResult(0, np.arange(4), np.zeros(4), none, none, cached, 0, None)


def test_the_decode_helper_counts_a_mamba_checkpoint_and_says_which_rule():
    ctx = _ctx(MAMBA)
    run = Run(ctx, "decode_cache_hit")
    turn2 = np.arange(358 + 128 + 1)
    assert _decode_miss(ctx, run, 0, _result(320), turn2) is None
    assert run.extra["hit_rule"] == "kl_multiturn_utils.make_mamba_decode_assert"
    assert run.extra["hit_step"] == 256
    assert run.extra["cache_counts"][0]["kind"] == "checkpoint"


def test_parity_rule_and_a_dense_server_keep_kl_test_utils_reason():
    for ctx in (_ctx(MAMBA, HitRule.KL_TEST_UTILS), _ctx(StateGeometry())):
        run = Run(ctx, "decode_cache_hit")
        why = _decode_miss(ctx, run, 0, _result(320), np.arange(358 + 128 + 1))
        (miss,) = run.extra["cache_counts"]  # the skip reason's words: tests/unit/words
        assert why is not None and miss["kind"] == MissKind.BEFORE_DECODE_REGION
        assert (miss["cached"], miss["lower"]) == (320, 360)  # 320 <= 358-token prompt + 1
        assert run.extra["hit_rule"] == "kl_test_utils" and run.extra["hit_step"] is None


def test_the_prefill_helper_says_why_a_chunk_multiple_missed():
    ctx = _ctx(MAMBA)
    run = Run(ctx, "prefill_cache_hit")
    why = _prefill_miss(ctx, run, 1, _result(0), ctx.prompts[1])
    assert why is not None  # a miss, skipped with why (words: tests/unit/words); its count:
    assert run.extra["cache_counts"] == [
        {
            "sample": 1,
            "rule": "kl_multiturn_utils.make_mamba_prefill_assert",
            "kind": "chunk_multiple",
            "cached": 0,
            "length": 384,
            "lower": 320,
            "upper": 384,
            "step": 64,
        }
    ]
