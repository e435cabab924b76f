"""A cache helper's skip reason in words: one golden line per miss kind of `metrics/hit_rules`
(the `SampleSkipped` reason `helpers/cache_hit` gives); the hit rules' tests assert the kind and
the figures the count records."""

from __future__ import annotations

import numpy as np
import pytest

from kltui.engines.sglang import SGLangClient
from kltui.helpers.cache_hit import _counted
from kltui.helpers.context import HelperContext
from kltui.helpers.phases import Run
from kltui.metrics.hit_rules import HitCount, decode_count, prefill_count


def _reason(count: HitCount) -> str | None:
    ctx = HelperContext(client=SGLangClient("http://127.0.0.1:9"), prompts=[np.arange(4)])
    return _counted(Run(ctx, "prefill_cache_hit"), 0, count)


@pytest.mark.parametrize(
    ("count", "reason"),
    [
        (prefill_count(0, 384, None), "prefill cache miss (cached_tokens=0)"),
        (decode_count(320, 358, 128, None), "no decode-region hit (cached_tokens=320 <= 359)"),
        (
            prefill_count(0, 384, 64),
            "no checkpoint hit (cached_tokens=0, accepted in [320, 384]: chunk_multiple)",
        ),
        (
            decode_count(255, 358, 128, 256),
            "no checkpoint hit (cached_tokens=255, accepted >= 256: below_checkpoint)",
        ),
        (
            prefill_count(873, 881, 64),
            "no checkpoint hit (cached_tokens=873, accepted in [768, 832]: past_checkpoint)",
        ),
    ],
    ids=lambda x: str(x.kind) if isinstance(x, HitCount) else "",
)
def test_each_miss_kind_says_its_figures(count, reason):
    assert _reason(count) == reason


def test_a_hit_is_no_skip():
    assert _reason(prefill_count(448, 482, 64)) is None
