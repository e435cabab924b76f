"""cross_engine's floors: each engine's own noise, measured in the same run on the same ids.

After the comparison, a sample of its sequences (`metrics.floors.floor_sample`, at most
FLOOR_SAMPLES) is scored a second time by each engine, one sequence at a time (the first
scoring sent them in batches): vLLM's teacher-forced prompt logprobs and SGLang's teacher-forced
prefill, with the same request fields as the first time (SGLang is asked for the same
token_ids_logprob). Each engine's second answer against its first is that engine's floor, in
the metrics the engines are compared with (`metrics.floors`). One FloorScored event per sample
carries both second answers, so a recording replays them (the drill-down's own-noise band).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

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


async def measure(
    ctx: HelperContext,
    vllm: VLLMClient,
    fl: Floors,
    cross: list[tuple[int, CrossPositions]],
    mean_k3: dict[int, float],
    out: dict,
) -> AsyncIterator[Event]:
    """Score each kept sample again on both engines, one at a time on each (the engines at
    once); FloorScored per sample;
    the floors' figures and reading into `out` (the summary's `floors`). An engine error is a
    warning: the comparison's numbers are all measured already."""
    k = ctx.top_k
    got: dict[str, list[tuple[int, CrossPositions]]] = {"sglang": [], "vllm": []}
    out.update(
        samples=[], of=fl.of, composition=COMPOSITION, error=None,
        first_batch=max((f.batch for f in fl.first.values()), default=None),
        same_composition=bool(fl.first) and all(f.batch == 1 for f in fl.first.values()),
    )  # fmt: skip
    firsts = list(fl.first.items())

    async def on_vllm() -> list[Completion]:
        return [
            (await vllm.completions([f.sample.seq], max_tokens=1, prompt_logprobs=k,
                                    temperature=0.0))[0]
            for _, f in firsts
        ]  # fmt: skip

    async def on_sglang() -> list[GenResult]:
        return [(await batches.teacher_forced(ctx, [f.sample], k, [f.ids]))[0] for _, f in firsts]

    try:
        # each engine sees one sequence at a time; the two engines work at once (on the H200
        # the floors cost 1.26x cross_engine with the 16 requests one after another)
        b2s, a2s = await asyncio.gather(on_vllm(), on_sglang())
        for (index, f), a2, b2 in zip(firsts, a2s, b2s, strict=True):
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
    for key, parts in got.items():
        out[key] = floor_metrics.floor_figures(parts, k=k)
    same = [(s, c) for s, c in cross if s in set(done)]
    gap = cross_summary(same, k=k)
    out["gap"] = {
        "avg_k3": floor_metrics.gap_on(mean_k3, done),
        "mean_abs_delta": gap["mean_abs_delta"],
        "max_abs_delta": gap["max_abs_delta"],
        "top1_agreement": gap["top1_agreement"],
    }
    reading = floor_metrics.read_floors(
        out["gap"]["avg_k3"], out["sglang"]["avg_k3"], out["vllm"]["avg_k3"]
    )
    out["reading"] = reading.to_dict()
