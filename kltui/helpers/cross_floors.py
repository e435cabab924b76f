"""cross_engine's floors: each engine's own noise, measured in the same run on the same ids.

A sample of the comparison's sequences (`metrics.floors.floor_sample`, at most FLOOR_SAMPLES)
is scored a second time by each engine, one sequence at a time (the comparison sends them in
batches): vLLM's teacher-forced prompt logprobs and SGLang's teacher-forced prefill, with the
same request fields as the comparison's (SGLang is asked for the same token_ids_logprob). Each
engine's second answer against its first is that engine's floor, in the metrics the engines are
compared with (`metrics.floors`). One FloorScored event per sample carries both second answers,
so a recording replays them (the drill-down's own-noise band).

The second scorings are sent while the comparison leaves their engine idle (`Second`): the
comparison works on one engine at a time, so SGLang's floor requests go while vLLM scores and
generates, and vLLM's while SGLang scores. Neither engine prefills from a cache for these
requests (SGLang: logprob_start_len 0; vLLM: skips its prefix cache for prompt logprobs, which
the contract probe checks before any number), so which of a sequence's two scorings comes first
does not change either answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kltui.engines.errors import EngineError
from kltui.engines.sglang_parse import GenResult
from kltui.engines.vllm import VLLMClient
from kltui.engines.vllm_parse import Completion
from kltui.helpers import cross_batches as batches
from kltui.helpers.cross_batches import Sample, pairs_to_topk, token_ids_table
from kltui.metrics import floors as floor_metrics
from kltui.metrics.cross import CrossPositions, Side, cross_summary
from kltui.session.events import Event, FloorScored, Problem

if TYPE_CHECKING:
    from kltui.helpers.context import HelperContext

COMPOSITION = "one at a time"


def sides(s: Sample, a: GenResult, b: Completion, ids: np.ndarray, k: int) -> tuple[Side, Side]:
    """SGLang's (with its token_ids_logprob table of `ids`) and vLLM's answer for one sample as
    Sides over its scored positions."""
    seq, p0 = s.seq, s.start
    top_a = pairs_to_topk(a.input_top, k, seq.size)
    extra = token_ids_table(a.input_token_ids_logprobs, ids, seq.size, f"sample {s.index}")
    side_a = Side(
        token_ids=seq[p0:],
        lp=a.input_logprobs[p0:],
        top_ids=top_a.ids[p0:],
        top_lp=top_a.lp[p0:],
        extra_ids=ids,
        extra_lp=extra[p0:],
    )
    if b.prompt is None:  # asked with prompt_logprobs: completions() fails without them
        raise ValueError(f"sample {s.index}: no prompt logprobs")
    side_b = Side(
        token_ids=seq[p0:],
        lp=b.prompt.lp[p0:],
        top_ids=b.prompt.top.ids[p0:],
        top_lp=b.prompt.top.lp[p0:],
    )
    return side_a, side_b


@dataclass
class First:
    """A floor sample's first scoring, kept until it is scored again."""

    sample: Sample
    a: Side
    b: Side
    ids: np.ndarray
    batch: int  # how many sequences its first requests held


@dataclass
class Floors:
    """The samples picked for the floors and their first scorings."""

    picks: list[int]
    of: int
    first: dict[int, First] = field(default_factory=dict)

    def keep(self, s: Sample, a: Side, b: Side, ids: np.ndarray, batch: int) -> None:
        """Keep a first scoring when its sample is one of the picks."""
        if s.index in self.picks:
            self.first[s.index] = First(s, a, b, ids, batch)


def pick(indices: list[int]) -> Floors:
    """The floors' samples among those the comparison will score."""
    return Floors(floor_metrics.floor_sample(indices, floor_metrics.FLOOR_SAMPLES), len(indices))


Engine = str  # "sglang" or "vllm"


class Second:
    """The floors' second scorings, each alone on its engine, sent while the comparison works
    on the other engine.

    Each engine has a lock: the comparison holds it while it sends that engine a batch (`busy`),
    and a floor request holds it while it is in flight, so a floor sequence never shares its
    engine with another request, and the comparison waits for at most one floor request. A
    sample is offered to an engine's queue once its request can be built (`offer`); one worker
    per engine sends what is queued, one at a time. What is still queued when the comparison
    ends is sent then (`finish`). The first engine error stops the floors (`error`): the
    comparison's numbers do not depend on them."""

    def __init__(self, ctx: HelperContext, vllm: VLLMClient, fl: Floors) -> None:
        self.ctx, self.vllm, self.fl = ctx, vllm, fl
        self.locks: dict[Engine, asyncio.Lock] = {"sglang": asyncio.Lock(), "vllm": asyncio.Lock()}
        self.queues: dict[Engine, asyncio.Queue] = {e: asyncio.Queue() for e in self.locks}
        self.answers: dict[Engine, dict[int, Any]] = {e: {} for e in self.locks}
        self.error: EngineError | ValueError | None = None
        self.tasks = [asyncio.create_task(self._work(e)) for e in self.locks] if fl.picks else []

    @asynccontextmanager
    async def busy(self, engine: Engine) -> AsyncIterator[None]:
        """The comparison's hold on `engine` while it sends a batch."""
        async with self.locks[engine]:
            yield

    def offer(self, engine: Engine, s: Sample, ids: np.ndarray | None = None) -> None:
        """Queue a pick's second scoring on `engine` (SGLang's with `ids`, vLLM's top-k ids of
        its first scoring, as token_ids_logprob); a sample not picked is ignored."""
        if s.index not in self.fl.picks or self.error is not None:
            return
        k = self.ctx.top_k
        call: Callable[[], Awaitable[Any]]
        if engine == "vllm":

            async def call() -> Completion:
                out = await self.vllm.completions(
                    [s.seq], max_tokens=1, prompt_logprobs=k, temperature=0.0
                )
                return out[0]
        else:
            wanted = ids if ids is not None else np.zeros(0, np.int64)

            async def call() -> GenResult:
                return (await batches.teacher_forced(self.ctx, [s], k, [wanted]))[0]

        self.queues[engine].put_nowait((s.index, call))

    async def _work(self, engine: Engine) -> None:
        queue = self.queues[engine]
        while (item := await queue.get()) is not None:
            index, call = item
            if self.error is not None:
                continue  # drain without sending: the floors are abandoned
            async with self.locks[engine]:
                try:
                    self.answers[engine][index] = await call()
                except (EngineError, ValueError) as e:
                    self.error = self.error or e

    async def finish(self) -> None:
        """Send what is still queued, and wait for it."""
        for q in self.queues.values():
            q.put_nowait(None)
        await asyncio.gather(*self.tasks)

    async def cancel(self) -> None:
        """Stop the workers (the comparison failed or was stopped)."""
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def measure(
    ctx: HelperContext,
    second: Second,
    cross: list[tuple[int, CrossPositions]],
    mean_k3: dict[int, float],
    out: dict,
) -> AsyncIterator[Event]:
    """Wait for the second scorings still in flight or queued (`Second`), compare each engine's
    with its first; FloorScored per sample; the floors' figures and reading into `out` (the
    summary's `floors`). An engine error is a warning: the comparison's numbers are all
    measured already."""
    k = ctx.top_k
    fl = second.fl
    got: dict[str, list[tuple[int, CrossPositions]]] = {"sglang": [], "vllm": []}
    out.update(
        samples=[], of=fl.of, composition=COMPOSITION, error=None,
        first_batch=max((f.batch for f in fl.first.values()), default=None),
        same_composition=bool(fl.first) and all(f.batch == 1 for f in fl.first.values()),
    )  # fmt: skip
    await second.finish()
    try:
        if second.error is not None:
            raise second.error
        for index, f in fl.first.items():
            a2, b2 = second.answers["sglang"].get(index), second.answers["vllm"].get(index)
            if a2 is None or b2 is None:
                raise ValueError(f"sample {index}: no second scoring")
            a, b = sides(f.sample, a2, b2, f.ids, k)
            got["sglang"].append((index, floor_metrics.floor_positions(f.a, a)))
            got["vllm"].append((index, floor_metrics.floor_positions(f.b, b)))
            yield FloorScored("cross_engine", ctx.server, index, a.lp, b.lp)
    except (EngineError, ValueError) as e:
        out["error"] = f"{getattr(e, 'server', 'cross_engine')}: {getattr(e, 'message', e)}"
        yield Problem(
            ctx.server,
            f"floors not measured ({out['error']}); the comparison's figures stand",
            fatal=False,
            helper="cross_engine",
            phase="floor",
        )
        return
    done = [i for i, _ in got["sglang"]]
    out["samples"] = done
    figures: dict[str, floor_metrics.FloorFigures] = {}
    for key, parts in got.items():
        figures[key] = floor_metrics.floor_figures(parts, k=k)
        out[key] = figures[key].to_json()
    same = [(s, c) for s, c in cross if s in set(done)]
    gap = cross_summary(same, k=k)
    gap_k3 = floor_metrics.gap_on(mean_k3, done)
    out["gap"] = {
        "avg_k3": gap_k3,
        "mean_abs_delta": gap.mean_abs_delta,
        "max_abs_delta": gap.max_abs_delta,
        "top1_agreement": gap.top1_agreement,
    }
    reading = floor_metrics.read_floors(gap_k3, figures["sglang"].avg_k3, figures["vllm"].avg_k3)
    out["reading"] = reading.to_json()
