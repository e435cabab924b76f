"""`hf_reference`: SGLang (and vLLM, when it is the baseline too) against the model as written,
Hugging Face transformers, on the same token ids.

Per sample: SGLang decodes a greedy continuation once (`--max-new-tokens`; with 0 the prompt
alone is compared). Then, chunk by chunk, prompt + continuation is teacher-forced through:
- the reference (`kltui.engines.hf`, a worker process): its logprob of every token and its
  top-K at every scored position, one sequence per forward by default;
- vLLM, when `--baseline vllm:URL` is given too: `prompt_logprobs=K` (a fresh prefill);
- SGLang: `max_new_tokens=0`, `logprob_start_len=0`, `top_logprobs_num=K` and the reference's
  (and vLLM's) top-K ids as `token_ids_logprob`;
and the reference is asked for its logprob of the engines' top-K ids at each position. So the
union KL against the reference keeps every id on both sides (`kltui.metrics.reference`).

Events: SGLang against the reference is this helper on the SGLang server (lp_a = SGLang, lp_b =
the reference); vLLM against the reference is this helper on the vLLM URL (lp_a = vLLM). The
vLLM row's summary also carries SGLang against vLLM on these same ids (`engines_pair`), so the
three-way table (`kltui.readings.three_way`) compares three pairs of one set of tokens.

Before any number, the config diff: each engine's settings beside the reference's
(dtype, attention implementation, device, weights); the runner has already refused other
weights (exit 2) unless --allow-different-models.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np

from kltui.engines.errors import EngineError
from kltui.engines.hf import HFReference, RefScore
from kltui.engines.vllm import VLLMClient
from kltui.engines.vllm_parse import Completion, TopK
from kltui.helpers import cross_batches as batches
from kltui.helpers.context import HelperContext, PhaseError
from kltui.helpers.cross_batches import Sample, chunks, pairs_to_topk, token_ids_table
from kltui.helpers.phases import Run
from kltui.metrics.alignment import MISMATCH, REFUSE, WARN
from kltui.metrics.cross import CrossPositions, Side, cross_positions, cross_summary
from kltui.metrics.k3 import avg_kl_div, within_threshold
from kltui.metrics.reference import (
    RefRow,
    align_reference,
    describe_ref,
    dtype_pair,
    ref_mismatches,
    reference_flips,
)
from kltui.session.events import (
    Event,
    HelperFinished,
    PhaseChanged,
    Problem,
    SampleScored,
    SampleSkipped,
    TokensDecoded,
)

HELPER = "hf_reference"
LOGIT_MODES = ("raw_logits", "processed_logits")
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

    def figures(self) -> dict:
        """The cross-engine figures against the reference, the flips by the reference's
        margin, the config diff and what the reference loaded as."""
        k = self.ctx.top_k
        fig = cross_summary(self.cross, None, k=k)
        fig["engine"] = self.engine
        fig["reference"] = self.ref.get("url")
        fig["reference_flips"] = reference_flips(self.cross)
        cov = fig.get("union_coverage")
        fig["union_exact"] = None if cov is None else bool(cov >= 1.0)
        fig["reference_alignment"] = [r.to_dict() for r in self.rows]
        fig["config_mismatches"] = [r.key for r in ref_mismatches(self.rows)]
        fig["config_unknown"] = [r.key for r in self.rows if r.status == "unknown"]
        dt = dtype_pair(self.rows)
        fig["across_dtypes"] = None if dt is None else {"engine": dt[0], "reference": dt[1]}
        fig["reference_loaded"] = self.loaded
        fig["reference_per_sample"] = self.per_sample
        fig["kl_gate"] = self.kl_gate
        if self.pair:
            pair = cross_summary(self.pair, None, k=k)
            pair["per_sample"] = self.pair_per_sample
            fig["engines_pair"] = pair
        return fig

    def finished(self, **extra) -> HelperFinished:
        """HelperFinished with the figures and the status."""
        fig = self.figures()
        fig.update(extra)
        if fig.get("status") is None:
            fig["status"] = self._status(fig)
        return super().finished(**fig)

    def _status(self, fig: dict) -> str:
        """Pass: the 95% agreement line holds, no top-1 flip where the reference was sure
        (margin >= the line), and avg_kl_div under a threshold the user set for it."""
        ok = bool(self.cross) and fig["agreement_ok"] is not False
        ok = ok and not fig["reference_flips"]["wide"]
        if self.kl_gate:
            avg = avg_kl_div([s.metrics.mean_k3 for s in self.book.samples.values()])
            ok = ok and within_threshold(avg, self.ctx.threshold)
        return "pass" if ok else "fail"


def _sample_row(index: int, c: CrossPositions, k: int) -> dict:
    one = cross_summary([(index, c)], None, k=k)
    fl = reference_flips([(index, c)])
    return {
        "index": index,
        "positions": c.n,
        "mean_k3": float(np.nanmean(c.k3)) if c.n else None,
        "mean_abs_delta": one["mean_abs_delta"],
        "top1_agreement": one["top1_agreement"],
        "union_kl_mean": one["union_kl_mean"],
        "flips": fl["flips"],
        "wide_flips": fl["wide"],
    }


async def _relay(
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


def _progress(run: Run, queue: asyncio.Queue):
    def on(stage: str, msg: dict) -> None:
        if stage == "forward":
            phase = f"reference forward {msg.get('done')}/{msg.get('total')}"
        else:
            phase = f"reference load: {msg.get('note') or stage}"
        queue.put_nowait(PhaseChanged(HELPER, run.ctx.server, str(phase)[:120]))

    return on


def _fail(run: RefRun, err: EngineError, phase: str, others: list[RefRun]) -> PhaseError:
    """The PhaseError of SGLang's row; `others` (the vLLM row) end as errors too
    (run_hf_reference yields their partial results before it raises)."""
    run.phase = phase
    e = PhaseError(err, HELPER, phase)
    e.finished = run.partial(f"{err.server}: {err.message}")
    for o in others:
        o.failed = f"{err.server}: {err.message}"
    return e


async def run_hf_reference(base: HelperContext, run: Run | None = None) -> AsyncIterator[Event]:
    """Compare `base.client` (and the vLLM baseline, when there is one) with the reference
    `base.reference`. Fatal faults raise a PhaseError whose `.finished` holds what SGLang's
    row measured; the vLLM row's partial result is yielded before it."""
    plan = base.reference
    if plan is None:
        raise ValueError("run_hf_reference needs a reference")
    ctx = replace(base, temperature=0.0, stream=False)
    ref_id = dict(plan.identity)
    # /server_info has every setting; the recorded identity adds the weights hash
    sg_ident = {**ctx.server_info, **plan.engines.get(ctx.server, {})}
    sg = RefRun(ctx, "SGLang", sg_ident, ref_id)
    vl: RefRun | None = None
    vllm: VLLMClient | None = None
    if plan.vllm_url and plan.engines.get(plan.vllm_url, {}).get("error") is None:
        vl_ctx = replace(ctx, server_url=plan.vllm_url)
        vl = RefRun(vl_ctx, "vLLM", plan.engines.get(plan.vllm_url, {}), ref_id)
        vllm = VLLMClient(plan.vllm_url, plan.vllm_api_key, timeout=ctx.request_timeout)
    runs = [sg] + ([vl] if vl else [])
    settings = {
        "reference": ref_id.get("url"),
        "dtype": ref_id.get("dtype"),
        "device": ref_id.get("device") or "cuda when available, else cpu",
        "attn_implementation": ref_id.get("attn_implementation") or "transformers' default",
        "batch_size": plan.settings.batch_size,
        "top_k": ctx.top_k,
        "max_new_tokens": ctx.max_new_tokens,
        "continuation": "greedy (temperature 0) by SGLang"
        if ctx.max_new_tokens
        else "none: prompt positions are compared",
    }
    queue: asyncio.Queue = asyncio.Queue()
    ref = HFReference(
        plan.settings,
        dtype=ref_id.get("dtype"),
        timeout=ctx.request_timeout,
        on_progress=_progress(sg, queue),
    )
    try:
        for r in runs:
            yield r.started(settings | {"engine": r.engine})
        for r in runs:
            yield r.enter("align")
            for row in ref_mismatches(r.rows):
                if row.severity == WARN:
                    yield Problem(r.ctx.server, describe_ref(row, r.engine), False, HELPER, "align")
            bad = [
                x
                for x in r.rows
                if x.status == MISMATCH
                and x.severity == REFUSE
                and not (x.key == "weights" and plan.allow_different_models)
            ]
            if bad:
                why = "refusing to compare: " + "; ".join(describe_ref(x, r.engine) for x in bad)
                raise _fail(sg, EngineError(ref.url, why, "refused"), "align", runs[1:])
        mode = vl.identity.get("logprobs_mode") if vl else None
        if vl is not None and mode in LOGIT_MODES:
            yield Problem(
                vl.ctx.server,
                f"vLLM runs with --logprobs-mode {mode}: its prompt logprobs are logits, not "
                "log-probabilities; its row against the reference is left out",
                False,
                HELPER,
                "align",
            )
            yield vl.finished(status="invalid", reason=f"--logprobs-mode {mode}")
            runs, vl, vllm = [sg], None, None
        yield sg.enter("load")
        got: list[Any] = []
        try:
            async for ev in _relay(ref.identify(), sg, queue, got):
                yield ev
        except EngineError as e:
            raise _fail(sg, e, "load", runs[1:]) from None
        loaded = got[0].record()
        for r in runs:
            r.loaded = {
                k: loaded.get(k)
                for k in (
                    "dtype", "device", "attn_implementation", "batch_size", "transformers_version",
                    "torch_version", "model_class", "parameters", "load_seconds",
                )
            }  # fmt: skip
            r.ref = loaded
            r.rows = align_reference(r.identity, loaded, engine_name=r.engine)
        async for ev in _compare(ctx, sg, vl, ref, vllm, queue):
            yield ev
        if vl is not None:
            yield vl.finished()
        yield sg.finished()
    except PhaseError:
        for r in runs[1:]:
            if r.failed is not None:
                yield r.partial(r.failed)
        raise
    finally:
        await ref.aclose()
        if vllm is not None:
            await vllm.aclose()


async def _compare(
    ctx: HelperContext,
    sg: RefRun,
    vl: RefRun | None,
    ref: HFReference,
    vllm: VLLMClient | None,
    queue: asyncio.Queue,
) -> AsyncIterator[Event]:
    k = ctx.top_k
    others = [vl] if vl else []
    samples = [
        Sample(i, np.asarray(p, dtype=np.int64), np.zeros(0, np.int64))
        for i, p in enumerate(ctx.prompts)
    ]
    if ctx.max_new_tokens > 0:
        yield sg.enter("decode")
        try:
            outs = await ctx.client.generate(
                [s.prompt for s in samples],
                ctx.sampling(ctx.max_new_tokens) | {"temperature": 0.0},
                return_logprob=True,
                logprob_start_len=-1,
            )
        except EngineError as e:
            raise _fail(sg, e, "decode", others) from None
        for s, out in zip(samples, outs, strict=True):
            s.cont, s.sglang_out = out.output_ids, out
            yield TokensDecoded(HELPER, ctx.server, s.index, 0, out.output_ids, out.output_logprobs)

    ref_len = sg.ref.get("max_model_len")
    v_len = vl.identity.get("max_model_len") if vl else None
    todo = []
    for s in samples:
        if isinstance(ref_len, int) and s.seq.size > ref_len:
            for row in [sg, *others]:
                row.skipped += 1
                yield SampleSkipped(
                    HELPER,
                    row.ctx.server,
                    s.index,
                    f"{s.seq.size} tokens exceed the reference's max_position_embeddings {ref_len}",
                )
        else:
            todo.append(s)

    for chunk in chunks(todo, 2 * k):
        # 1. the reference: logprobs and top-k (its logits stay in the worker for step 4)
        yield sg.enter("reference")
        got: list[list[RefScore]] = []
        try:
            async for ev in _relay(
                ref.score([s.seq for s in chunk], [s.start for s in chunk], k), sg, queue, got
            ):
                yield ev
        except EngineError as e:
            raise _fail(sg, _kept(e, sg), "reference", others) from None
        refs = got[0]
        # 2. vLLM's prompt logprobs on the samples it can hold
        fits = [not (isinstance(v_len, int) and s.seq.size + 1 > v_len) for s in chunk]
        comp: list[Completion | None] = [None] * len(chunk)
        if vl is not None and vllm is not None:
            for s, ok in zip(chunk, fits, strict=True):
                if not ok:
                    vl.skipped += 1
                    yield SampleSkipped(
                        HELPER, vl.ctx.server, s.index,
                        f"{s.seq.size + 1} tokens exceed vLLM's max_model_len {v_len}",
                    )  # fmt: skip
            sent = [s for s, ok in zip(chunk, fits, strict=True) if ok]
            if sent:
                yield vl.enter("baseline")
                try:
                    answers = await vllm.completions(
                        [s.seq for s in sent], max_tokens=1, prompt_logprobs=k, temperature=0.0
                    )
                except EngineError as e:
                    raise _fail(sg, e, "baseline", others) from None
                it = iter(answers)
                comp = [next(it) if ok else None for ok in fits]
        # 3. SGLang, asked for the reference's and vLLM's top-k ids too
        tops = [
            [rs.top_ids]
            + ([c.prompt.top.ids[s.start :]] if c is not None and c.prompt is not None else [])
            for s, rs, c in zip(chunk, refs, comp, strict=True)
        ]
        wanted, _ = batches.wanted_ids(chunk, tops, k)
        yield sg.enter("prefill")
        try:
            answers_a = await batches.teacher_forced(ctx, chunk, k, wanted)
        except EngineError as e:
            raise _fail(sg, e, "prefill", others) from None
        sides_a: list[Side] = []
        sides_v: list[Side | None] = []
        for s, a, c, ids in zip(chunk, answers_a, comp, wanted, strict=True):
            p0, n = s.start, s.seq.size
            top = pairs_to_topk(a.input_top, k, n)
            try:
                extra = token_ids_table(a.input_token_ids_logprobs, ids, n, f"sample {s.index}")
            except ValueError as e:
                err = EngineError(ctx.server, f"/generate: {e}", "malformed-answer")
                raise _fail(sg, err, "score", others) from None
            sides_a.append(
                Side(s.seq[p0:], a.input_logprobs[p0:], top.ids[p0:], top.lp[p0:], ids, extra[p0:])
            )
            if c is not None and c.prompt is not None:
                sides_v.append(
                    Side(s.seq[p0:], c.prompt.lp[p0:], c.prompt.top.ids[p0:], c.prompt.top.lp[p0:])
                )
            else:
                sides_v.append(None)
        # 4. the reference's logprobs of the engines' top-k ids, position by position
        asked = []
        for sa, sv in zip(sides_a, sides_v, strict=True):
            cols = [sa.top_ids] + ([sv.top_ids] if sv is not None else [])
            asked.append(np.concatenate(cols, axis=1) if cols[0].size else cols[0])
        yield sg.enter("reference")
        try:
            gathered = await ref.gather(asked)
        except EngineError as e:
            raise _fail(sg, _kept(e, sg), "reference", others) from None
        # 5. score
        yield sg.enter("score")
        rows = zip(chunk, refs, sides_a, sides_v, asked, gathered, strict=True)
        for s, rs, sa, sv, ids_b, lp_b in rows:
            hf = Side(s.seq[s.start :], rs.lp, rs.top_ids, rs.top_lp, pos_ids=ids_b, pos_lp=lp_b)
            try:
                yield _score(sg, s, sa, hf)
                if vl is not None and sv is not None:
                    yield _score(vl, s, sv, hf)
                    pair = cross_positions(sa, sv)
                    vl.pair.append((s.index, pair))
                    vl.pair_per_sample.append(_sample_row(s.index, pair, k))
            except ValueError as e:
                err = EngineError(ctx.server, f"score: {e}", "malformed-answer")
                raise _fail(sg, err, "score", others) from None


def _kept(e: EngineError, run: RefRun) -> EngineError:
    """The worker's fault, saying that what was measured is kept."""
    return EngineError(
        e.server, f"{e.message}; the {len(run.cross)} sample(s) compared before are kept", e.kind
    )


def _score(run: RefRun, s: Sample, a: Side, b: Side) -> SampleScored:
    c = cross_positions(a, b)
    run.cross.append((s.index, c))
    run.per_sample.append(_sample_row(s.index, c, run.ctx.top_k))
    top_a = TopK(a.top_ids, a.top_lp).as_lists()
    top_b = TopK(b.top_ids, b.top_lp).as_lists()
    run.book.add(s.index, a.token_ids, a.lp, b.lp, 0, s.start, top_a, top_b)
    return SampleScored(
        HELPER, run.ctx.server, s.index, a.token_ids, a.lp, b.lp, 0, s.start, top_a, top_b
    )
