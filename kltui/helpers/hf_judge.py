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
union KL against the reference keeps every id on both sides (`kltui.metrics.hf_judge`).

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
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from kltui.engines.errors import EngineError
from kltui.engines.hf import HFReference, RefScore
from kltui.engines.vllm import VLLMClient
from kltui.engines.vllm_parse import Completion
from kltui.helpers import cross_batches as batches
from kltui.helpers.context import HelperContext, PhaseError, ReferencePlan
from kltui.helpers.cross_batches import Sample, chunks, pairs_to_topk, token_ids_table
from kltui.helpers.hf_judge_row import (
    HELPER,
    RefRun,
    fail,
    kept,
    progress_to,
    relay,
    sample_row,
    score,
)
from kltui.helpers.phases import Run
from kltui.metrics.alignment import MISMATCH, REFUSE, WARN
from kltui.metrics.cross import Side, cross_positions
from kltui.metrics.hf_judge import (
    align_reference,
    describe_ref,
    ref_mismatches,
)
from kltui.session.events import (
    Event,
    Problem,
    SampleSkipped,
)

LOGIT_MODES = ("raw_logits", "processed_logits")


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
    vl, vllm = _vllm_row(ctx, plan, ref_id)
    runs = [sg] + ([vl] if vl else [])
    settings = _settings_json(ctx, plan, ref_id)
    queue: asyncio.Queue = asyncio.Queue()
    ref = HFReference(
        plan.settings,
        dtype=ref_id.get("dtype"),
        timeout=ctx.request_timeout,
        on_progress=progress_to(sg, queue),
    )
    try:
        for r in runs:
            yield r.started(settings | {"engine": r.engine})
        for r in runs:
            for ev in _aligned(r):
                yield ev
            if why := _refusal(r, plan.allow_different_models):
                raise fail(sg, EngineError(ref.url, why, "refused"), "align", runs[1:])
        if vl is not None and (mode := vl.identity.get("logprobs_mode")) in LOGIT_MODES:
            for ev in _left_out(vl, mode):
                yield ev
            runs, vl, vllm = [sg], None, None
        async for ev in _load(sg, ref, queue, runs):
            yield ev
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


def _left_out(vl: RefRun, mode: str) -> Iterator[Event]:
    """vLLM's row ends invalid: under --logprobs-mode raw or processed logits its prompt
    logprobs are logits."""
    yield Problem(
        vl.ctx.server,
        f"vLLM runs with --logprobs-mode {mode}: its prompt logprobs are logits, not "
        "log-probabilities; its row against the reference is left out",
        False,
        HELPER,
        "align",
    )
    yield vl.finished(status="invalid", reason=f"--logprobs-mode {mode}")


async def _load(
    sg: RefRun, ref: HFReference, queue: asyncio.Queue, runs: list[RefRun]
) -> AsyncIterator[Event]:
    """The reference loads (its progress relayed); what it loaded as goes to every row."""
    yield sg.enter("load")
    got: list[Any] = []
    try:
        async for ev in relay(ref.identify(), sg, queue, got):
            yield ev
    except EngineError as e:
        raise fail(sg, e, "load", runs[1:]) from None
    _loaded(runs, got[0].record())


def _vllm_row(
    ctx: HelperContext, plan: ReferencePlan, ref_id: dict
) -> tuple[RefRun | None, VLLMClient | None]:
    """The vLLM baseline's row and client, when there is a baseline that was identified."""
    if not plan.vllm_url or plan.engines.get(plan.vllm_url, {}).get("error") is not None:
        return None, None
    vl_ctx = replace(ctx, server_url=plan.vllm_url)
    vl = RefRun(vl_ctx, "vLLM", plan.engines.get(plan.vllm_url, {}), ref_id)
    return vl, VLLMClient(plan.vllm_url, plan.vllm_api_key, timeout=ctx.request_timeout)


def _settings_json(ctx: HelperContext, plan: ReferencePlan, ref_id: dict) -> dict:
    """The settings every row starts with (HelperStarted's): the reference's and the
    comparison's."""
    return {
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


def _aligned(r: RefRun) -> Iterator[Event]:
    """The align phase of one row: a warning per setting that differs from the reference."""
    yield r.enter("align")
    for row in ref_mismatches(r.rows):
        if row.severity == WARN:
            yield Problem(r.ctx.server, describe_ref(row, r.engine), False, HELPER, "align")


def _refusal(r: RefRun, allow_different_models: bool) -> str:
    """Why the row cannot be compared with the reference ("" when it can): another model, or
    other weights unless --allow-different-models."""
    bad = [
        x
        for x in r.rows
        if x.status == MISMATCH
        and x.severity == REFUSE
        and not (x.key == "weights" and allow_different_models)
    ]
    if not bad:
        return ""
    return "refusing to compare: " + "; ".join(describe_ref(x, r.engine) for x in bad)


def _loaded(runs: list[RefRun], loaded: dict) -> None:
    """What the reference loaded as, into every row, and each row's config diff against it."""
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


async def _compare(
    ctx: HelperContext,
    sg: RefRun,
    vl: RefRun | None,
    ref: HFReference,
    vllm: VLLMClient | None,
    queue: asyncio.Queue,
) -> AsyncIterator[Event]:
    """The comparison once the reference is loaded: SGLang's continuation, the samples the
    reference cannot hold skipped, then chunk by chunk."""
    k = ctx.top_k
    others = [vl] if vl else []
    samples = [
        Sample(i, np.asarray(p, dtype=np.int64), np.zeros(0, np.int64))
        for i, p in enumerate(ctx.prompts)
    ]
    if ctx.max_new_tokens > 0:
        async for ev in _sglang_decode(ctx, sg, samples, others):
            yield ev

    ref_len = sg.ref.get("max_model_len")
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
        async for ev in _compare_chunk(ctx, sg, vl, ref, vllm, queue, chunk):
            yield ev


async def _compare_chunk(
    ctx: HelperContext,
    sg: RefRun,
    vl: RefRun | None,
    ref: HFReference,
    vllm: VLLMClient | None,
    queue: asyncio.Queue,
    chunk: list[Sample],
) -> AsyncIterator[Event]:
    """One chunk of samples through the reference, vLLM and SGLang, then scored."""
    k = ctx.top_k
    others = [vl] if vl else []
    # 1. the reference: logprobs and top-k (its logits stay in the worker for step 4)
    yield sg.enter("reference")
    got: list[list[RefScore]] = []
    try:
        async for ev in relay(
            ref.score([s.seq for s in chunk], [s.start for s in chunk], k), sg, queue, got
        ):
            yield ev
    except EngineError as e:
        raise fail(sg, kept(e, sg), "reference", others) from None
    refs = got[0]
    # 2. vLLM's prompt logprobs on the samples it can hold
    comp: list[Completion | None] = [None] * len(chunk)
    if vl is not None and vllm is not None:
        async for ev in _vllm_prompts(sg, vl, vllm, chunk, comp):
            yield ev
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
        raise fail(sg, e, "prefill", others) from None
    sides_a, sides_v = _sides(sg, others, chunk, answers_a, comp, wanted)
    # 4. the reference's logprobs of the engines' top-k ids, position by position
    asked = [_asked(sa, sv) for sa, sv in zip(sides_a, sides_v, strict=True)]
    yield sg.enter("reference")
    try:
        gathered = await ref.gather(asked)
    except EngineError as e:
        raise fail(sg, kept(e, sg), "reference", others) from None
    # 5. score
    yield sg.enter("score")
    rows = zip(chunk, refs, sides_a, sides_v, asked, gathered, strict=True)
    for s, rs, sa, sv, ids_b, lp_b in rows:
        hf = Side(s.seq[s.start :], rs.lp, rs.top_ids, rs.top_lp, pos_ids=ids_b, pos_lp=lp_b)
        try:
            for ev in _score_sample(sg, vl, s, sa, sv, hf):
                yield ev
        except ValueError as e:
            err = EngineError(ctx.server, f"score: {e}", "malformed-answer")
            raise fail(sg, err, "score", others) from None


def _asked(sa: Side, sv: Side | None) -> np.ndarray:
    """The ids the reference is asked for at each position: SGLang's top-k, then vLLM's."""
    cols = [sa.top_ids] + ([sv.top_ids] if sv is not None else [])
    return np.concatenate(cols, axis=1) if cols[0].size else cols[0]


def _score_sample(
    sg: RefRun, vl: RefRun | None, s: Sample, sa: Side, sv: Side | None, hf: Side
) -> Iterator[Event]:
    """One sample scored: SGLang against the reference, then vLLM against it and against
    SGLang (the vLLM row's `engines_pair`)."""
    yield score(sg, s, sa, hf)
    if vl is not None and sv is not None:
        yield score(vl, s, sv, hf)
        pair = cross_positions(sa, sv)
        vl.pair.append((s.index, pair))
        vl.pair_per_sample.append(sample_row(s.index, pair, sg.ctx.top_k))


async def _sglang_decode(
    ctx: HelperContext, sg: RefRun, samples: list[Sample], others: list[RefRun]
) -> AsyncIterator[Event]:
    """SGLang's greedy continuation of every sample, compared after its prompt."""
    yield sg.enter("decode")
    try:
        async for ev in batches.greedy_continuations(ctx, samples, HELPER):
            yield ev
    except EngineError as e:
        raise fail(sg, e, "decode", others) from None


async def _vllm_prompts(
    sg: RefRun, vl: RefRun, vllm: VLLMClient, chunk: list[Sample], comp: list[Completion | None]
) -> AsyncIterator[Event]:
    """vLLM's prompt logprobs of the chunk's samples it can hold, into `comp` (None for the
    ones it cannot, each skipped on its row)."""
    v_len = vl.identity.get("max_model_len")
    fits = [not (isinstance(v_len, int) and s.seq.size + 1 > v_len) for s in chunk]
    for s, ok in zip(chunk, fits, strict=True):
        if not ok:
            vl.skipped += 1
            yield SampleSkipped(
                HELPER, vl.ctx.server, s.index,
                f"{s.seq.size + 1} tokens exceed vLLM's max_model_len {v_len}",
            )  # fmt: skip
    sent = [s for s, ok in zip(chunk, fits, strict=True) if ok]
    if not sent:
        return
    yield vl.enter("baseline")
    try:
        answers = await vllm.completions(
            [s.seq for s in sent], max_tokens=1, prompt_logprobs=vl.ctx.top_k, temperature=0.0
        )
    except EngineError as e:
        raise fail(sg, e, "baseline", [vl]) from None
    it = iter(answers)
    comp[:] = [next(it) if ok else None for ok in fits]


def _sides(
    sg: RefRun,
    others: list[RefRun],
    chunk: list[Sample],
    answers_a: list,
    comp: list[Completion | None],
    wanted: list,
) -> tuple[list[Side], list[Side | None]]:
    """Each sample's SGLang side (its top-k and the other ids asked for) and vLLM's (None
    where vLLM has no answer), from the first scored position on."""
    k = sg.ctx.top_k
    sides_a: list[Side] = []
    sides_v: list[Side | None] = []
    for s, a, c, ids in zip(chunk, answers_a, comp, wanted, strict=True):
        p0, n = s.start, s.seq.size
        top = pairs_to_topk(a.input_top, k, n)
        try:
            extra = token_ids_table(a.input_token_ids_logprobs, ids, n, f"sample {s.index}")
        except ValueError as e:
            err = EngineError(sg.ctx.server, f"/generate: {e}", "malformed-answer")
            raise fail(sg, err, "score", others) from None
        sides_a.append(
            Side(s.seq[p0:], a.input_logprobs[p0:], top.ids[p0:], top.lp[p0:], ids, extra[p0:])
        )
        if c is not None and c.prompt is not None:
            sides_v.append(
                Side(s.seq[p0:], c.prompt.lp[p0:], c.prompt.top.ids[p0:], c.prompt.top.lp[p0:])
            )
        else:
            sides_v.append(None)
    return sides_a, sides_v
