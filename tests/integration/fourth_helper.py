"""A fourth helper, added by docs/ARCHITECTURE.md's "A new helper" recipe and nothing else: this
file (the helper, copied from `kltui/helpers/match.py` and `cache_hit.py`) and one registry entry
(`ENTRY`, which `test_fourth_helper.py` puts into `kltui.helpers.registry.HELPERS`).

`half_prefix_hit`: the first half of every prompt is prefilled to warm the radix cache, then the
whole prompt is decoded on that partial hit and replayed as one fresh prefill. It probes the
restore of a prefix that ends inside the prompt (KV written by prefill), so its role is "cache".
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from kltui.engines.sglang_parse import GenResult
from kltui.helpers.context import HelperContext
from kltui.helpers.phases import Run, helper
from kltui.helpers.registry import Helper
from kltui.session.events import Event, SampleSkipped

NAME = "half_prefix_hit"

ENTRY = Helper(
    NAME,
    threshold_field="kl_div_prefill",
    side_b="decode",
    path="restore of a radix-cache prefix that ends inside the prompt (half of it cached)",
    start="tests.integration.fourth_helper:half_prefix_hit",
    default=False,
    role="cache",
    cache_path="prefill",
)


@helper(NAME)
async def half_prefix_hit(ctx: HelperContext, run: Run) -> AsyncIterator[Event]:
    """Decode each prompt on a radix hit of its first half; replay it as one fresh prefill."""
    yield run.started({"max_new_tokens": ctx.max_new_tokens, "temperature": ctx.temperature})
    samples = list(range(len(ctx.prompts)))
    async for ev in run.flush():
        yield ev
    halves = [p[: max(1, len(p) // 2)] for p in ctx.prompts]
    warm: list[GenResult] = []
    async for ev in run.generate("warm", halves, samples, warm, max_new_tokens=0, logprobs=False):
        yield ev
    out: list[GenResult] = []
    async for ev in run.generate(
        "decode", ctx.prompts, samples, out, max_new_tokens=ctx.max_new_tokens
    ):
        yield ev
    items = []
    for s, r in zip(samples, out, strict=True):
        if r.cached_tokens > 0:
            items.append((s, ctx.prompts[s], r))
        else:
            run.skipped += 1
            yield SampleSkipped(run.helper, ctx.server, s, "no radix hit on the prompt's half")
    run.extra["hits"] = len(items)
    async for ev in run.replay_and_score(items):
        yield ev
    yield run.finished()
