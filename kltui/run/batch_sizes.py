"""`--batch-sizes 1,8,32`: the same prompts scored at each concurrency on the same server.

Some engines switch kernels with the batch size (seed 0 of the KL guide: "fix it and test it
separately"). After the helpers, each helper is run again on the first max(sizes) prompts, in
batches of each size one after the other (a batch of b prompts is one batched request, as the
helper sends it), and every sample is compared bit for bit (readings/compare.py) with the
smallest size's. The result, per helper, is the smallest batch size at which any token id or
logprob changes (None: none changes), with where it changed first. On a deterministic server any
change is a batch-invariance gap: the field's "deterministic mode diverges above batch 8" is
this. A size above the number of prompts cannot be reached: the probe runs the largest batch it
can (all the prompts) in its place, and names the sizes not reached rather than count them as
tested. The probe's own samples are not scored into the helpers' results.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable

from kltui.helpers.context import HelperContext, PhaseError
from kltui.helpers.phases import Run
from kltui.metrics.k3 import ScoreBook
from kltui.readings.compare import compare_books
from kltui.registry import Helper
from kltui.session.events import BatchProbed, Event, SampleScored
from kltui.session.store import add_scored


async def _scored_at(spec: Helper, ctx: HelperContext, n: int, size: int) -> ScoreBook:
    """The helper's samples 0..n-1, run in batches of `size` prompts."""
    book = ScoreBook(ctx.tail_threshold)
    for start in range(0, n, size):
        sub = dataclasses.replace(ctx, prompts=ctx.prompts[start : start + size])
        async for ev in spec.starter()(sub, Run(sub, spec.name)):
            if isinstance(ev, SampleScored):
                add_scored(book, dataclasses.replace(ev, sample=start + ev.sample))
    return book


async def batch_probe(
    sizes: list[int], specs: list[Helper], ctx_of: Callable[[Helper], HelperContext]
) -> AsyncIterator[Event]:
    """One BatchProbed per helper: the smallest of `sizes` whose tokens differ from the
    smallest size's, bit for bit."""
    sizes = sorted(set(sizes))
    for spec in specs:
        ctx = ctx_of(spec)
        n = min(len(ctx.prompts), max(sizes))
        reached = sorted({min(b, n) for b in sizes})
        missed = [b for b in sizes if b > n]
        try:
            books = {b: await _scored_at(spec, ctx, n, b) for b in reached}
        except PhaseError as e:
            yield BatchProbed(
                spec.name,
                ctx.server,
                reached,
                n,
                error=f"[{e.phase}] {e.err.message}",
                prompts=n,
                not_reached=missed,
            )
            continue
        base = books[reached[0]]
        changed, first = None, None
        for b in reached[1:]:
            diff = compare_books(base, books[b])
            f = diff.first
            if f is not None:
                changed = b
                first = {"sample": f.sample, "position": f.first, "side": f.side}
                break
        compared = len(compare_books(base, books[reached[-1]]).samples)
        yield BatchProbed(
            spec.name,
            ctx.server,
            reached,
            compared,
            changed,
            first,
            prompts=n,
            not_reached=missed,
        )
