"""`prefill_cache_hit` and `decode_cache_hit`: side B decodes on a radix-cache hit.

Hit rules are SGLang's (metrics/hit_rules.py): on a dense server kl_test_utils' (a prefill hit
is `cached_tokens > 0`; a decode hit needs `cached_tokens > len(turn1 prompt) + 1`, the hit
reaches KV written by decode); on a Mamba server, where the cache restores a state only at
checkpoints, kl_multiturn_utils' with the server's chunk and track interval (`--hit-rule
kl_test_utils` keeps the first everywhere, for parity). Each request's count (kind and figures)
goes in the summary's `cache_counts`. Misses are skipped and reported, never averaged in; fewer
than `min_cache_hit_ratio` hits fails the helper.

Requests are SGLang's (`sglang.test.kl_test_utils`, 0.5.23): the warm prefill without logprobs,
turn 1 and the decode with `return_logprob` and `logprob_start_len=-1`, the replay with
`logprob_start_len=0`, `temperature` 0 and `ignore_eos`. kltui differs on purpose in three
ways, none of which changes a logprob: decode-side requests are streamed (`stream: true`, so the
TUI shows tokens as they come; `--no-stream` sends them as SGLang does); the replay asks for
`return_text_in_logprobs` (the drill-down shows token text) and for `top_logprobs_num`
(`--top-k`, 5 by default, 0 turns it off: alternatives in the drill-down). Every helper checks what SGLang's does
not: that each answer belongs to its prompt and that side A scores the ids side B generated.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import numpy as np

from kltui.engines.errors import EngineError
from kltui.engines.identity import as_int
from kltui.engines.sglang_parse import GenResult
from kltui.errors import UsageError
from kltui.helpers.context import HelperContext
from kltui.helpers.phases import Run, helper
from kltui.metrics.hit_rules import HitCount, HitRule, MissKind, decode_count, prefill_count
from kltui.metrics.summary import SummaryStatus
from kltui.session.events import Event, HelperFinished, Problem


def _vacuous(ctx: HelperContext, run: Run) -> Problem | None:
    if ctx.server_info.get("disable_radix_cache"):
        # name deterministic inference as a possible cause only where the server runs with it
        why = (
            " (--disable-radix-cache, or deterministic inference, which it runs with and which "
            "forces this on some attention backends)"
            if ctx.server_info.get("enable_deterministic_inference") is True
            else ""
        )
        return Problem(
            ctx.server,
            f"{run.helper} is vacuous: the server runs with disable_radix_cache=true{why}, so no "
            "cache hit can happen",
            fatal=False,
            helper=run.helper,
        )
    return None


def _hit_check(ctx: HelperContext, run: Run, hits: int, kind: str) -> Problem | None:
    n = len(ctx.prompts)
    need = ctx.min_cache_hit_ratio * n
    run.extra.update({"hits": hits, "hit_ratio": hits / n if n else 0.0})
    if hits > need or ctx.skip_hit_assert:
        return None
    run.extra["status"] = SummaryStatus.FAIL
    run.extra["hit_failure"] = f"Too few {kind} cache hits {hits}/{n} (need > {need:g})"
    return Problem(ctx.server, run.extra["hit_failure"], fatal=False, helper=run.helper)


def _pool_facts(ctx: HelperContext, run: Run, inputs: list[np.ndarray]) -> None:
    """What the cache had to hold for every hit: every sample is warmed before the first hit,
    so when the hit requests' inputs together exceed the server's KV pool, the radix cache
    (LRU) can evict the earliest before their turn. Both figures go in the summary; the
    reading (readings/coverage.pool_misses) compares them."""
    pool = as_int(ctx.server_info.get("max_total_num_tokens"))
    run.extra["kv_pool_tokens"] = pool if pool is not None and pool > 0 else None
    run.extra["hit_input_tokens"] = int(sum(x.size for x in inputs))


async def _opening(ctx: HelperContext, run: Run) -> AsyncIterator[Event]:
    """HelperStarted, then why the helper is vacuous and its end, else the temperature warning."""
    yield run.started(
        {
            "max_new_tokens": ctx.max_new_tokens,
            "temperature": ctx.temperature,
            "min_cache_hit_ratio": ctx.min_cache_hit_ratio,
        }
    )
    if (p := _vacuous(ctx, run)) is not None:
        yield p
        yield run.finished(status=SummaryStatus.VACUOUS, reason=p.message)
    elif (warn := run.temperature_warning()) is not None:
        yield warn


async def _on_hits(
    ctx: HelperContext,
    run: Run,
    kind: str,
    prepare: Callable[[HelperContext, Run, list[np.ndarray]], AsyncIterator[Event]],
    missed: Callable[[HelperContext, Run, int, GenResult, np.ndarray], str | None],
) -> AsyncIterator[Event]:
    """A cache helper from start to end: `prepare` warms the cache and gives the decode's inputs;
    the decode's hits are replayed and scored, its misses skipped with why."""
    async for ev in _opening(ctx, run):
        yield ev
        if isinstance(ev, HelperFinished):
            return
    inputs: list[np.ndarray] = []
    async for ev in prepare(ctx, run, inputs):
        yield ev
    _pool_facts(ctx, run, inputs)
    items: list[tuple[int, np.ndarray, GenResult]] = []
    async for ev in run.decode(inputs, items, lambda s, r: missed(ctx, run, s, r, inputs[s])):
        yield ev
    if (p := _hit_check(ctx, run, len(items), kind)) is not None:
        yield p
    async for ev in run.replay_and_score(items):
        yield ev
    yield run.finished()


async def _warm_prompts(
    ctx: HelperContext, run: Run, inputs: list[np.ndarray]
) -> AsyncIterator[Event]:
    """Flush, prefill every prompt without logprobs; the decode's inputs are the prompts."""
    samples = list(range(len(ctx.prompts)))
    async for ev in run.flush():
        yield ev
    warm: list[GenResult] = []
    async for ev in run.generate(
        "warm", ctx.prompts, samples, warm, max_new_tokens=0, logprobs=False
    ):
        yield ev
    inputs.extend(ctx.prompts)


def _mamba_step(ctx: HelperContext, what: str) -> int | None:
    """The server's chunk or track interval where the engine's rule counts on checkpoints
    (a Mamba server, --hit-rule engine), else None (kl_test_utils' rule)."""
    m = ctx.geometry.mamba
    if ctx.hit_rule is HitRule.KL_TEST_UTILS or m is None:
        return None
    if what != "chunk":  # decode saves land on the track grid (lcm with the chunk and page)
        return ctx.geometry.track_grid()
    figure = m.chunk_size
    return figure.value if figure is not None and figure.value > 0 else None


def _counted(run: Run, sample: int, count: HitCount) -> str | None:
    """Record one request's count in the summary; the skip reason of a miss, None on a hit."""
    run.extra.setdefault("cache_counts", []).append({"sample": sample, **count.record()})
    run.extra["hit_rule"], run.extra["hit_step"] = str(count.counted_by), count.step
    if count.hit:
        return None
    if count.kind is MissKind.NO_PREFIX:
        return "prefill cache miss (cached_tokens=0)"
    if count.kind is MissKind.BEFORE_DECODE_REGION:
        return f"no decode-region hit (cached_tokens={count.cached} <= {count.lower - 1})"
    bound = f">= {count.lower}" if count.upper is None else f"in [{count.lower}, {count.upper}]"
    return f"no checkpoint hit (cached_tokens={count.cached}, accepted {bound}: {count.kind})"


def _prefill_miss(
    ctx: HelperContext, run: Run, sample: int, r: GenResult, sent: np.ndarray
) -> str | None:
    """Why a decode missed the prefill cache, or None on a hit."""
    return _counted(
        run, sample, prefill_count(r.cached_tokens, sent.size, _mamba_step(ctx, "chunk"))
    )


@helper("prefill_cache_hit")
async def prefill_cache_hit(ctx: HelperContext, run: Run) -> AsyncIterator[Event]:
    """The prefill_cache_hit helper: decoding on a radix-cache hit of KV written by prefill."""
    async for ev in _on_hits(ctx, run, "prefill", _warm_prompts, _prefill_miss):
        yield ev


async def _comma_ids(ctx: HelperContext, run: Run) -> np.ndarray:
    """kl_test_utils appends tokenizer.encode(","): with a BOS-adding tokenizer that is BOS + ",".
    From --separator-ids, else the server's tokenizer, else (a server started with
    --skip-tokenizer-init) the local one."""
    if ctx.comma_ids is None:
        if ctx.server_tokenizes:
            try:
                (ctx.comma_ids,) = await ctx.client.tokenize([","])
                ctx.comma_source = "the server's tokenizer"
            except EngineError as e:
                if e.kind != "no-tokenizer" or ctx.tokenizer is None:
                    raise run.error(_with_fix(e)) from None
        if ctx.comma_ids is None:
            if ctx.tokenizer is None:
                raise run.error(_with_fix(EngineError(ctx.server, "", "no-tokenizer")))
            try:
                ctx.comma_ids = np.asarray(ctx.tokenizer.encode(","), dtype=np.int64)
            except UsageError as e:  # the local tokenizer's load failed (it loads in background)
                raise run.error(EngineError(ctx.server, str(e), "tokenizer")) from None
            ctx.comma_source = f"local tokenizer {ctx.tokenizer.describe()}"
    run.extra["separator_ids"] = [int(t) for t in ctx.comma_ids]
    run.extra["separator_source"] = ctx.comma_source
    return ctx.comma_ids


def _with_fix(e: EngineError) -> EngineError:
    if e.kind != "no-tokenizer":
        return e
    return EngineError(
        e.server,
        'the server has no tokenizer (--skip-tokenizer-init) to tokenize the separator ",": '
        "pass --tokenizer PATH (the model's tokenizer folder) or --separator-ids IDS "
        '(the ids of tokenizer.encode(","))',
        "no-tokenizer",
    )


async def _first_turn(
    ctx: HelperContext, run: Run, inputs: list[np.ndarray]
) -> AsyncIterator[Event]:
    """Flush, decode turn 1; the decode's inputs are each prompt + its answer + the separator."""
    samples = list(range(len(ctx.prompts)))
    comma = await _comma_ids(ctx, run)
    async for ev in run.flush():
        yield ev
    turn1: list[GenResult] = []
    # Turn 1 asks for logprobs as SGLang's helper does (return_logprob, logprob_start_len=-1):
    # the server then runs the same requests, although turn 1's logprobs are never scored.
    async for ev in run.generate(
        "turn1", ctx.prompts, samples, turn1, max_new_tokens=ctx.max_new_tokens
    ):
        yield ev
    inputs.extend(
        np.concatenate([p, r.output_ids, comma]) for p, r in zip(ctx.prompts, turn1, strict=True)
    )


def _decode_miss(
    ctx: HelperContext, run: Run, sample: int, r: GenResult, sent: np.ndarray
) -> str | None:
    """Why a decode missed the cache's decode region, or None on a hit. Turn 2's input is
    turn 1's prompt (h), its output (o) and the separator."""
    h = ctx.prompts[sample].size
    o = sent.size - h - (0 if ctx.comma_ids is None else ctx.comma_ids.size)
    count = decode_count(r.cached_tokens, h, o, _mamba_step(ctx, "track"))
    return _counted(run, sample, count)


@helper("decode_cache_hit")
async def decode_cache_hit(ctx: HelperContext, run: Run) -> AsyncIterator[Event]:
    """The decode_cache_hit helper: decoding on a radix-cache hit that reaches KV written by decode."""
    async for ev in _on_hits(ctx, run, "decode", _first_turn, _decode_miss):
        yield ev
