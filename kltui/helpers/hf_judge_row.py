"""One engine's row against the Hugging Face reference (`hf_reference.py`): what it measured
(`RefRun`: the positions compared, the config diff, its figures and status), each sample's
scoring, its failures, and the reference worker's progress relayed as events while a job
runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import numpy as np

from kltui.engines.errors import EngineError
from kltui.engines.vllm_parse import TopK
from kltui.helpers.context import HelperContext, PhaseError
from kltui.helpers.cross_batches import Sample
from kltui.helpers.phases import Run
from kltui.metrics.cross import CrossPositions, Side, cross_positions, cross_summary
from kltui.metrics.cross_figures import CrossFigures
from kltui.metrics.hf_judge import (
    RefFlips,
    RefRow,
    align_reference,
    dtype_pair,
    ref_mismatches,
    reference_flips,
)
from kltui.metrics.k3 import avg_kl_div, within_threshold
from kltui.metrics.summary import SummaryStatus
from kltui.session.events import (
    Event,
    HelperFinished,
    PhaseChanged,
    SampleScored,
)

HELPER = "hf_reference"
T = TypeVar("T")


class RefRun(Run):
    """One engine against the reference: the positions compared and the config diff."""

    def __init__(self, ctx: HelperContext, engine: str, identity: dict, ref: dict) -> None:
        super().__init__(ctx, HELPER)
        self.engine = engine
        self.identity = identity
        self.rows: list[RefRow] = align_reference(identity, ref, engine_name=engine)
        self.ref = ref
        self.loaded: dict[str, Any] = {}
        self.cross: list[tuple[int, CrossPositions]] = []
        self.per_sample: list[dict] = []
        # SGLang vs vLLM on the same ids (the vLLM row only)
        self.pair: list[tuple[int, CrossPositions]] = []
        self.pair_per_sample: list[dict] = []
        self.failed: str | None = None  # the fault that ended this row with SGLang's
        src = ctx.threshold_source
        self.kl_gate = src is not None and src.user_set

    def figures(self, fig: CrossFigures, flips: RefFlips) -> dict[str, Any]:
        """The cross-engine figures against the reference, the flips by the reference's
        margin, the config diff and what the reference loaded as, as the summary holds them."""
        cov = fig.union_coverage
        dt = dtype_pair(self.rows)
        out = fig.to_json() | {
            "engine": self.engine,
            "reference": self.ref.get("url"),
            "reference_flips": flips.to_json(),
            "union_exact": None if cov is None else bool(cov >= 1.0),
            "reference_alignment": [r.to_json() for r in self.rows],
            "config_mismatches": [r.key for r in ref_mismatches(self.rows)],
            "config_unknown": [r.key for r in self.rows if r.status == "unknown"],
            "across_dtypes": None if dt is None else {"engine": dt[0], "reference": dt[1]},
            "reference_loaded": self.loaded,
            "reference_per_sample": self.per_sample,
            "kl_gate": self.kl_gate,
        }
        if self.pair:
            pair = cross_summary(self.pair, None, k=self.ctx.top_k)
            out["engines_pair"] = pair.to_json() | {"per_sample": self.pair_per_sample}
        return out

    def finished(self, **extra) -> HelperFinished:
        """HelperFinished with the figures and the status."""
        fig = cross_summary(self.cross, None, k=self.ctx.top_k)
        flips = reference_flips(self.cross)
        out = self.figures(fig, flips) | extra
        if out.get("status") is None:
            out["status"] = self._status(fig, flips)
        return super().finished(**out)

    def _status(self, fig: CrossFigures, flips: RefFlips) -> SummaryStatus:
        """Pass: the 95% agreement line holds, no top-1 flip where the reference was sure
        (margin >= the line), and avg_kl_div under a threshold the user set for it."""
        ok = bool(self.cross) and fig.agreement_ok is not False
        ok = ok and not flips.wide
        if self.kl_gate:
            avg = avg_kl_div([s.metrics.mean_k3 for s in self.book.samples.values()])
            ok = ok and within_threshold(avg, self.ctx.threshold)
        return SummaryStatus.PASS if ok else SummaryStatus.FAIL


def sample_row(index: int, c: CrossPositions, k: int) -> dict[str, Any]:
    """One sample against the reference, as the summary's `reference_per_sample` lists it."""
    one = cross_summary([(index, c)], None, k=k)
    fl = reference_flips([(index, c)])
    return {
        "index": index,
        "positions": c.n,
        "mean_k3": float(np.nanmean(c.k3)) if c.n else None,
        "mean_abs_delta": one.mean_abs_delta,
        "top1_agreement": one.top1_agreement,
        "union_kl_mean": one.union_kl_mean,
        "flips": fl.flips,
        "wide_flips": fl.wide,
    }


async def relay(
    job: Awaitable[T], run: Run, queue: asyncio.Queue, out: list[T]
) -> AsyncIterator[Event]:
    """Awaits `job`, yielding a PhaseChanged for each progress message the worker sends
    meanwhile (the load's steps, then one per forward); its result goes to `out`."""
    task: asyncio.Future[T] = asyncio.ensure_future(job)
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                yield getter.result()
                continue
            getter.cancel()
            while not queue.empty():
                yield queue.get_nowait()
            out.append(task.result())
            return
    finally:
        if not task.done():
            task.cancel()


def progress_to(run: Run, queue: asyncio.Queue):
    def on(stage: str, msg: dict) -> None:
        if stage == "forward":
            phase = f"reference forward {msg.get('done')}/{msg.get('total')}"
        else:
            phase = f"reference load: {msg.get('note') or stage}"
        queue.put_nowait(PhaseChanged(HELPER, run.ctx.server, str(phase)[:120]))

    return on


def fail(run: RefRun, err: EngineError, phase: str, others: list[RefRun]) -> PhaseError:
    """The PhaseError of SGLang's row; `others` (the vLLM row) end as errors too
    (`run_hf_reference` yields their partial results before it raises)."""
    run.phase = phase
    e = PhaseError(err, HELPER, phase)
    e.finished = run.partial(f"{err.server}: {err.message}")
    for o in others:
        o.failed = f"{err.server}: {err.message}"
    return e


def kept(e: EngineError, run: RefRun) -> EngineError:
    """The worker's fault, saying that what was measured is kept."""
    return EngineError(
        e.server, f"{e.message}; the {len(run.cross)} sample(s) compared before are kept", e.kind
    )


def score(run: RefRun, s: Sample, a: Side, b: Side) -> SampleScored:
    c = cross_positions(a, b)
    run.cross.append((s.index, c))
    run.per_sample.append(sample_row(s.index, c, run.ctx.top_k))
    top_a = TopK(a.top_ids, a.top_lp).as_lists()
    top_b = TopK(b.top_ids, b.top_lp).as_lists()
    run.book.add(s.index, a.token_ids, a.lp, b.lp, 0, s.start, top_a, top_b)
    return SampleScored(
        HELPER, run.ctx.server, s.index, a.token_ids, a.lp, b.lp, 0, s.start, top_a, top_b
    )
