"""A fourth helper, added by docs/ARCHITECTURE.md's "A new helper" recipe and nothing else: this
file (the helper, copied from `kltui/helpers/match.py` and `cache_hit.py`) and one registry entry
(`ENTRY`, which `test_fourth_helper.py` puts into `kltui.registry.HELPERS`).

`half_prefix_hit`: the first half of every prompt is prefilled to warm the radix cache, then the
whole prompt is decoded on that partial hit and replayed as one fresh prefill. It probes the
restore of a prefix that ends inside the prompt (KV written by prefill), so its role is "cache".
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np

from kltui.engines.sglang_parse import GenResult
from kltui.helpers.context import HelperContext
from kltui.helpers.phases import Run, helper
from kltui.registry import CachePath, Helper, Role
from kltui.session.events import Event

NAME = "half_prefix_hit"

ENTRY = Helper(
    NAME,
    threshold_field="kl_div_prefill",
    side_b="decode",
    path="restore of a radix-cache prefix that ends inside the prompt (half of it cached)",
    start="tests.integration.fourth_helper:half_prefix_hit",
    default=False,
    role=Role.CACHE,
    cache_path=CachePath.PREFILL,
)


@helper(NAME)
async def half_prefix_hit(ctx: HelperContext, run: Run) -> AsyncIterator[Event]:
    """Decode each prompt on a radix hit of its first half; replay it as one fresh prefill."""
    async for ev in run.begin(
        {"max_new_tokens": ctx.max_new_tokens, "temperature": ctx.temperature}
    ):
        yield ev
    samples = list(range(len(ctx.prompts)))
    async for ev in run.flush():
        yield ev
    halves = [p[: max(1, len(p) // 2)] for p in ctx.prompts]
    warm: list[GenResult] = []
    async for ev in run.generate("warm", halves, samples, warm, max_new_tokens=0, logprobs=False):
        yield ev
    items: list[tuple[int, np.ndarray, GenResult]] = []
    async for ev in run.decode(ctx.prompts, items, _missed):
        yield ev
    run.extra["hits"] = len(items)
    async for ev in run.replay_and_score(items):
        yield ev
    yield run.finished()


def _missed(sample: int, r: GenResult) -> str | None:
    """Why a decode missed the warmed half, or None on a hit."""
    return None if r.cached_tokens > 0 else "no radix hit on the prompt's half"
