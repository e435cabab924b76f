"""`match`: decode cold, flush, replay prompt+output as one prefill; catches batch variance."""

from __future__ import annotations

from collections.abc import AsyncIterator

from kltui.engines.sglang_parse import GenResult
from kltui.helpers.context import HelperContext
from kltui.helpers.phases import Run, helper
from kltui.session.events import Event


@helper("match")
async def match(ctx: HelperContext, run: Run) -> AsyncIterator[Event]:
    """The match helper: a cold decode against the same prompt and output replayed as one prefill."""
    yield run.started({"max_new_tokens": ctx.max_new_tokens, "temperature": ctx.temperature})
    if (warn := run.temperature_warning()) is not None:
        yield warn
    samples = list(range(len(ctx.prompts)))
    async for ev in run.flush():
        yield ev
    out: list[GenResult] = []
    async for ev in run.generate(
        "decode", ctx.prompts, samples, out, max_new_tokens=ctx.max_new_tokens
    ):
        yield ev
    items = [(s, ctx.prompts[s], r) for s, r in zip(samples, out, strict=True)]
    async for ev in run.replay_and_score(items):
        yield ev
    yield run.finished()
