"""`match`: decode cold, flush, replay prompt+output as one prefill; catches batch variance."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np

from kltui.engines.sglang_parse import GenResult
from kltui.helpers.context import HelperContext
from kltui.helpers.phases import Run, helper
from kltui.session.events import Event


@helper("match")
async def match(ctx: HelperContext, run: Run) -> AsyncIterator[Event]:
    """The match helper: a cold decode against the same prompt and output replayed as one prefill."""
    async for ev in run.begin(
        {"max_new_tokens": ctx.max_new_tokens, "temperature": ctx.temperature}
    ):
        yield ev
    async for ev in run.flush():
        yield ev
    items: list[tuple[int, np.ndarray, GenResult]] = []
    async for ev in run.decode(ctx.prompts, items):
        yield ev
    async for ev in run.replay_and_score(items):
        yield ev
    yield run.finished()
