"""`match`: decode cold, flush, replay prompt+output as one prefill; catches batch variance.

Cold is checked, not assumed: after the flush no decode may reuse more of its prompt than it
shares with another prompt of the same batch (the only KV this run can have written). A larger
`cached_tokens` means the server kept its radix cache through /flush_cache (a proxy or a
server that ignores the flush), so the decode ran on a restored prefix, a cache path, and
match would read a state bug as kernel noise: the helper is then invalid and says why.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np

from kltui.engines.sglang_parse import GenResult
from kltui.helpers.context import HelperContext
from kltui.helpers.phases import Run, helper
from kltui.metrics.summary import SummaryStatus
from kltui.session.events import Event, Problem


def shared_prefix(prompts: list[np.ndarray]) -> np.ndarray:
    """Per prompt, the longest prefix it shares with any other prompt of the list (the longest
    is always with a neighbour in sorted order)."""
    n = len(prompts)
    out = np.zeros(n, dtype=np.int64)
    order = sorted(range(n), key=lambda i: tuple(int(t) for t in prompts[i]))
    for a, b in zip(order, order[1:], strict=False):
        x, y = prompts[a], prompts[b]
        m = min(x.size, y.size)
        diff = np.flatnonzero(x[:m] != y[:m])
        common = int(diff[0]) if diff.size else m
        out[a], out[b] = max(out[a], common), max(out[b], common)
    return out


def not_cold(prompts: list[np.ndarray], items: list[tuple[int, np.ndarray, GenResult]]) -> str:
    """Why match's decode was not cold ('' when it was)."""
    bound = shared_prefix(prompts)
    warm = [(s, r.cached_tokens) for s, _, r in items if r.cached_tokens > bound[s]]
    if not warm:
        return ""
    s, c = warm[0]
    return (
        f"match's decode was not cold: after /flush_cache, {len(warm)} of {len(items)} samples "
        f"reused cached KV (sample {s}: cached_tokens={c}, more than the {int(bound[s])} tokens "
        "it shares with another prompt): the server did not flush its radix cache, so match "
        "compared a cache path, not the cold one, and says nothing about kernels"
    )


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
    warm = not_cold(ctx.prompts, items)
    if warm:
        yield Problem(ctx.server, warm, fatal=False, helper=run.helper, phase="decode")
    async for ev in run.replay_and_score(items):
        yield ev
    yield run.finished(status=SummaryStatus.INVALID, reason=warm) if warm else run.finished()
