"""`cross_engine`: the same token ids teacher-forced through SGLang (side A) and vLLM (side B).

Per sample: SGLang decodes a greedy continuation once (`--max-new-tokens`; with 0 the prompt
alone is compared). Then, for prompt + continuation:
- vLLM `/v1/completions`, `prompt_logprobs=K`, `max_tokens=1`: its logprob of every token and
  its top-K at every position (a fresh prefill: vLLM skips its prefix cache for these, which
  the contract probe checks before any number, `cross_probes.prefix_cache_probe`);
- SGLang `/generate`, `max_new_tokens=0`, `logprob_start_len=0` (a fresh prefill too: the radix
  match is capped at logprob_start_len), `top_logprobs_num=K`, and `token_ids_logprob` holding
  vLLM's top-K ids, so SGLang's logprob of every id vLLM ranks is known (`kltui.metrics.cross`
  explains how the union KL uses them).
The continuation's positions are scored (the whole prompt when there is none) and recorded as
SampleScored events with lp_a = SGLang and lp_b = vLLM, so the heatmap and drill-down work as
for the other helpers. Separately, vLLM decodes its own greedy continuation of each prompt, and
the two greedy generations are compared with vLLM's own acceptance rule. Last, each engine's
own noise beside the gap: a sample of the sequences scored again by each engine in another
batch (`cross_floors`).

Before any number, the two servers' configurations are put side by side (`kltui.metrics.alignment`);
mismatches become Problems, and a different model or vocabulary refuses the comparison.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from kltui.engines.errors import EngineError
from kltui.engines.identity import ServerIdentity
from kltui.engines.sglang_parse import GenResult
from kltui.engines.vllm import VLLMClient
from kltui.engines.vllm_parse import Completion, TopK
from kltui.engines.weights import local_config
from kltui.helpers import cross_batches as batches
from kltui.helpers import cross_floors
from kltui.helpers.context import HelperContext, PhaseError
from kltui.helpers.cross_batches import Sample, chunks, pairs_to_topk
from kltui.helpers.cross_preflight import contracts, probe_tokenizers, startup_log
from kltui.helpers.phases import Run
from kltui.metrics.alignment import WARN, Row, align, describe, mismatches, refusals, unknowns
from kltui.metrics.cross import (
    CrossPositions,
    cross_positions,
    cross_summary,
    first_token_mismatch,
)
from kltui.metrics.cross_figures import CrossFigures, GreedyMismatch
from kltui.metrics.k3 import avg_kl_div, within_threshold
from kltui.metrics.summary import SummaryStatus
from kltui.session.events import (
    Event,
    HelperFinished,
    Problem,
    SampleScored,
    SampleSkipped,
)

HELPER = "cross_engine"
# Faults after which the baseline is gone rather than answering something wrong.


class CrossEngineError(PhaseError):
    """A fatal fault of the cross-engine helper, carrying what was measured before it.

    The runner yields a fatal Problem for it and then `finished` (instead of Run.partial)."""

    def __init__(self, err: EngineError, phase: str, finished: HelperFinished) -> None:
        super().__init__(err, HELPER, phase)
        self.finished = finished


class CrossRun(Run):
    """A Run that also holds the baseline, its identity and what the comparison found."""

    def __init__(self, ctx: HelperContext, baseline: VLLMClient) -> None:
        super().__init__(ctx, HELPER)
        self.baseline = baseline
        # avg_kl_div gates the verdict only when the user chose the threshold (--threshold or a
        # config entry); SGLang's CI values are for prefill vs decode, not engines.
        src = ctx.threshold_source
        self.kl_gate = src is not None and src.user_set
        self.vllm_identity = ServerIdentity()
        self.alignment: list[Row] = []
        self.cross: list[tuple[int, CrossPositions]] = []
        self.greedy: list[tuple[int, GreedyMismatch | None]] = []
        self.per_sample: list[dict] = []
        self.contract: dict | None = None
        self.floors: dict | None = None  # each engine against itself (cross_floors)
        # samples too long to ask SGLang for vLLM's top-k ids at every position
        self.dropped_ids = 0

    def summary_figures(self) -> CrossFigures:
        """The figures of every sample compared so far (`metrics.cross.cross_summary`)."""
        return cross_summary(self.cross, self.greedy, k=self.ctx.top_k)

    def cross_figures(self, fig: CrossFigures) -> dict[str, Any]:
        """cross_engine's figures beyond the k3 summary (agreement, greedy, alignment), as the
        summary holds them."""
        return fig.to_json() | {
            "alignment": [r.to_json() for r in self.alignment],
            "config_mismatches": [r.key for r in mismatches(self.alignment)],
            "config_unknown": [r.key for r in unknowns(self.alignment)],
            "baseline": self.vllm_identity.get("url"),
            "kl_gate": self.kl_gate,
            "cross_per_sample": self.per_sample,
            "contract": self.contract,
            "floors": self.floors,
        }

    def finished(self, **extra) -> HelperFinished:
        """The HelperFinished event with the cross-engine figures and status."""
        fig = self.summary_figures()
        figures = self.cross_figures(fig) | extra
        if figures.get("status") is None:
            figures["status"] = self._status(fig)
        return super().finished(**figures)

    def _status(self, fig: CrossFigures) -> SummaryStatus:
        """Pass: the migration guide's agreement line holds, every greedy divergence passes
        vLLM's own rule, no top-1 flip crosses FLIP_MARGIN_LINE, and avg_kl_div is under the threshold when one was set for this."""
        ok = bool(self.cross) and fig.agreement_ok is not False
        ok = ok and fig.greedy_rule_failures == 0
        # a top-1 flip across a wide margin is not rounding near a tie
        ok = ok and not fig.flip_margins.across_line
        if self.kl_gate:
            avg = avg_kl_div([s.metrics.mean_k3 for s in self.book.samples.values()])
            ok = ok and within_threshold(avg, self.ctx.threshold)
        return SummaryStatus.PASS if ok else SummaryStatus.FAIL


def _fail(run: CrossRun, err: EngineError, phase: str) -> CrossEngineError:
    run.phase = phase
    return CrossEngineError(err, phase, run.partial(f"{err.server}: {err.message}"))


async def cross_engine(ctx: HelperContext, run: CrossRun) -> AsyncIterator[Event]:
    """The helper proper: run.baseline is identified and aligned already (run_cross_engine)."""
    vllm = run.baseline
    k = ctx.top_k
    samples = [
        Sample(i, np.asarray(p, dtype=np.int64), np.zeros(0, np.int64))
        for i, p in enumerate(ctx.prompts)
    ]

    # 1. SGLang's greedy continuation (with its top-k, for the greedy comparison).
    if ctx.max_new_tokens > 0:
        async for ev in _sglang_decode(ctx, run, samples):
            yield ev

    # Samples the baseline cannot hold are skipped, never truncated (other ids, other numbers).
    limit = run.vllm_identity.get("max_model_len")
    limit = limit if isinstance(limit, int) else None
    todo = [s for s in samples if limit is None or s.seq.size + 1 <= limit]
    for s in samples:
        if limit is not None and s.seq.size + 1 > limit:
            run.skipped += 1
            yield SampleSkipped(
                HELPER,
                ctx.server,
                s.index,
                f"{s.seq.size + 1} tokens exceed the baseline's max_model_len {limit}",
            )

    floors = cross_floors.pick([s.index for s in todo])
    # the floors' second scorings go while the comparison works on the other engine
    second = cross_floors.Second(ctx, vllm, floors)
    try:
        for chunk in chunks(todo, k):
            async for ev in _compare_chunk(ctx, run, chunk, second, floors, len(samples)):
                yield ev
        if floors.first:
            # 5. Each engine against itself: what of the floors' second scorings is left.
            yield run.enter("floor")
            run.floors = {}
            means = {i: sc.metrics.mean_k3 for i, sc in run.book.samples.items()}
            async for ev in cross_floors.measure(ctx, second, run.cross, means, run.floors):
                yield ev
    finally:
        await second.cancel()
    for ev in _closing(ctx, run):
        yield ev


async def _compare_chunk(
    ctx: HelperContext,
    run: CrossRun,
    chunk: list[Sample],
    second: cross_floors.Second,
    floors: cross_floors.Floors,
    total: int,
) -> AsyncIterator[Event]:
    """One batch compared: vLLM's teacher-forced logprobs (and greedy generation), SGLang's on
    the same ids, then each sample scored."""
    k = ctx.top_k
    # 2. vLLM: teacher-forced prompt logprobs, and its own greedy generation.
    yield run.enter("baseline")
    scored_b, wanted, dropped, greedy_b = await _vllm_chunk(ctx, run, chunk, second, total)
    for s in chunk:
        second.offer("vllm", s)  # vLLM is idle while SGLang scores
    run.dropped_ids += dropped

    # 3. SGLang: the same ids, with vLLM's top-k ids as token_ids_logprob.
    yield run.enter("prefill")
    try:
        async with second.busy("sglang"):
            scored_a = await batches.teacher_forced(ctx, chunk, k, wanted)
    except EngineError as e:
        raise _fail(run, e, "prefill") from None

    # 4. Score.
    greedy: list[Completion | None] = list(greedy_b) if greedy_b else [None] * len(chunk)
    yield run.enter("score")
    for s, a, b, ids, g in zip(chunk, scored_a, scored_b, wanted, greedy, strict=True):
        try:
            ev = _score(ctx, run, s, a, b, ids, g, floors, len(chunk))
        except ValueError as e:
            err = EngineError(ctx.server, f"/generate: {e}", "malformed-answer")
            raise _fail(run, err, "score") from None
        yield ev


async def _vllm_chunk(
    ctx: HelperContext,
    run: CrossRun,
    chunk: list[Sample],
    second: cross_floors.Second,
    total: int,
) -> tuple[list[Completion], list[np.ndarray], int, list[Completion] | None]:
    """vLLM's part of one batch: its teacher-forced prompt logprobs (and from them, the ids
    SGLang is asked for), then its own greedy generation; (scored, wanted ids, ids dropped,
    greedy). The floors' SGLang requests for the batch are queued as soon as their ids are
    known: SGLang is idle until the comparison's own SGLang request."""
    vllm, k = run.baseline, ctx.top_k
    try:
        async with second.busy("vllm"):
            scored_b = await vllm.completions(
                [s.seq for s in chunk], max_tokens=1, prompt_logprobs=k, temperature=0.0
            )
            # asked with prompt_logprobs: completions() fails when an answer lacks them
            tops = [[b.prompt.top.ids[s.start :]] for s, b in zip(chunk, scored_b, strict=True)]  # type: ignore[union-attr]
            wanted, dropped = batches.wanted_ids(chunk, tops, k)
            for s, ids in zip(chunk, wanted, strict=True):
                second.offer("sglang", s, ids)
            greedy_b: list[Completion] | None = None
            if ctx.max_new_tokens > 0:
                greedy_b = await vllm.completions(
                    [s.prompt for s in chunk],
                    max_tokens=ctx.max_new_tokens,
                    logprobs=k,
                    temperature=0.0,
                )
    except EngineError as e:
        if e.gone:
            e = EngineError.of(
                e.server,
                f"baseline went away after {len(run.cross)} of {total} samples were compared "
                f"({e.message}); what was measured is kept",
                e.kind,
            )
        raise _fail(run, e, "baseline") from None
    return scored_b, wanted, dropped, greedy_b


async def _sglang_decode(
    ctx: HelperContext, run: CrossRun, samples: list[Sample]
) -> AsyncIterator[Event]:
    """SGLang's greedy continuation of every sample, with its top-k."""
    yield run.enter("decode")
    try:
        async for ev in batches.greedy_continuations(ctx, samples, HELPER, ctx.top_k):
            yield ev
    except EngineError as e:
        raise _fail(run, e, "decode") from None
    run.extra["sglang_decoded"] = len(samples)


def _closing(ctx: HelperContext, run: CrossRun) -> Iterator[Event]:
    """The helper's end: the warnings of what it measured (ids it could not ask for, flips
    across a wide margin, protocol findings) and its HelperFinished."""
    k = ctx.top_k
    if run.dropped_ids:
        yield Problem(
            ctx.server,
            f"{run.dropped_ids} sample(s) too long to ask SGLang for vLLM's top-{k} ids at every "
            "position: their union KL folds those ids into 'other' (a looser lower bound)",
            fatal=False,
            helper=HELPER,
        )
    fin = run.finished()
    wide = run.summary_figures().flip_margins
    if wide.across_line and (big := wide.largest) is not None:
        yield Problem(
            run.baseline.url,
            f"{wide.across_line} of {wide.flips} top-1 flip(s) cross a margin of "
            f"{wide.line:g} nats or more (widest: sample {big.sample} position "
            f"{big.position}, SGLang {_nats(big.margin_a)} / vLLM "
            f"{_nats(big.margin_b)} nats): not "
            "rounding near a tie",
            fatal=False,
            helper=HELPER,
            phase="score",
        )
    yield from run.protocol_problems(fin)  # each protocol finding is also a line of its own
    yield fin


def _nats(x: float | None) -> str:
    return "?" if x is None else f"{x:.3g}"


def _score(
    ctx: HelperContext,
    run: CrossRun,
    s: Sample,
    a: GenResult,
    b,
    ids,
    g,
    floors: cross_floors.Floors,
    batch: int,
) -> Event:
    k = ctx.top_k
    p0 = s.start
    n = s.seq.size - p0
    side_a, side_b = cross_floors.sides(s, a, b, ids, k)
    floors.keep(s, side_a, side_b, ids, batch)
    cross = cross_positions(side_a, side_b)
    run.cross.append((s.index, cross))
    greedy = None
    if g is not None and s.sglang_out is not None:
        top_sg = pairs_to_topk(s.sglang_out.output_top, k, s.cont.size)
        greedy = first_token_mismatch(s.cont, g.output.token_ids, top_sg.ids, g.output.top.ids)
        run.greedy.append((s.index, greedy))
    top_a = TopK(side_a.top_ids, side_a.top_lp).as_lists()
    top_b = TopK(side_b.top_ids, side_b.top_lp).as_lists()
    run.book.add(s.index, side_a.token_ids, side_a.lp, side_b.lp, 0, p0, top_a, top_b)
    one = cross_summary([(s.index, cross)], [(s.index, greedy)] if g is not None else None, k=k)
    run.per_sample.append(
        {
            "index": s.index,
            "positions": n,
            "max_abs_delta": one.max_abs_delta,
            "mean_abs_delta": one.mean_abs_delta,
            "top1_agreement": one.top1_agreement,
            "topk_overlap": one.topk_overlap,
            "union_kl_mean": one.union_kl_mean,
            "first_top1_disagreement": cross.first_top1_disagreement(),
            "flips": one.flip_margins.flips,
            "large_margin_flips": one.flip_margins.across_line,
            "greedy_first_mismatch": None if greedy is None else greedy.to_json(),
        }
    )
    return SampleScored(
        HELPER, ctx.server, s.index, side_a.token_ids, side_a.lp, side_b.lp, 0, p0, top_a, top_b
    )


# ------------------------------------------------------------------------------ entry point


def _refusal(rows: list[Row]) -> str | None:
    bad = refusals(rows)
    if not bad:
        return None
    return "refusing to compare: " + "; ".join(describe(r) for r in bad)


async def run_cross_engine(base: HelperContext, run: Run | None = None) -> AsyncIterator[Event]:
    """Compare `base.client` with the vLLM baseline `base.baseline_url` on `base.prompts`.

    (`run` is the registry's common signature; the comparison keeps a CrossRun of its own.)

    Yields HelperStarted, one Problem per configuration mismatch (before any number), then the
    helper's events and HelperFinished. Fatal faults (baseline unreachable, a different model or
    vocabulary, engine errors) raise CrossEngineError, a PhaseError whose `.finished` holds the
    summary of what was measured until then.
    """
    if not base.baseline_url:
        raise ValueError("run_cross_engine needs a baseline URL")
    # the baseline's own key only: the SGLang servers' key never goes to vLLM
    vllm = VLLMClient(base.baseline_url, base.baseline_api_key, timeout=base.request_timeout)
    # the same context as every helper; the comparison is greedy and not streamed
    ctx = replace(base, temperature=0.0, stream=False)
    run = CrossRun(ctx, vllm)
    try:
        yield run.started(
            {
                "baseline": vllm.url,
                "top_k": ctx.top_k,
                "max_new_tokens": ctx.max_new_tokens,
                "continuation": "greedy (temperature 0) by SGLang"
                if ctx.max_new_tokens
                else "none: prompt positions are compared",
                "agreement_line": 0.95,
            },
        )
        async for ev in _align(ctx, run):
            yield ev
        yield run.enter("contract")
        try:
            verdict, run.contract = await contracts(ctx, vllm, run.vllm_identity)
        except EngineError as e:
            raise _fail(run, e, "contract") from None
        if not verdict.values:
            # a definition gap must never read as drift: no number is measured
            yield Problem(vllm.url, verdict.message, fatal=False, helper=HELPER, phase="contract")
            yield run.finished(status=SummaryStatus.INVALID, reason=verdict.message)
            return
        async for ev in cross_engine(ctx, run):
            yield ev
    finally:
        await vllm.aclose()


async def _align(ctx: HelperContext, run: CrossRun) -> AsyncIterator[Event]:
    """The baseline identified and its configuration put beside SGLang's: a Problem per
    mismatch or unknown setting, and a refusal (raised) for a different model or vocabulary."""
    vllm = run.baseline
    yield run.enter("align")
    try:
        run.vllm_identity = await vllm.identify(startup_log(ctx.baseline_log))
    except EngineError as e:
        raise _fail(run, e, "align") from None
    probe = await probe_tokenizers(ctx.client, vllm)
    checkpoint = await asyncio.to_thread(
        local_config, ctx.server, ctx.server_info.get("model_path")
    )
    run.alignment = align(
        ctx.server_info,
        run.vllm_identity.record(),
        top_k=ctx.top_k,
        tokenizer_probe=probe,
        checkpoint=checkpoint,
    )
    for row in mismatches(run.alignment):
        if row.severity == WARN:
            yield Problem(vllm.url, describe(row), fatal=False, helper=HELPER, phase="align")
    if unsaid := [r.key for r in unknowns(run.alignment) if r.severity == WARN]:
        yield Problem(
            vllm.url,
            "not known to be the same on both engines (one side does not report them): "
            + ", ".join(unsaid),
            fatal=False,
            helper=HELPER,
            phase="align",
        )
    if (reason := _refusal(run.alignment)) is not None:
        raise _fail(run, EngineError(vllm.url, reason, "refused"), "align")
