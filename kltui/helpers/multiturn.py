"""`multiturn`: SGLang's `kl_multiturn_utils` branching run (issue 58), as
`unified_radix_cache_kit.test_multiturn_prefill_cache_hit_branching` runs it.

Flush; warm every conversation's prefix (prefill only); turn 0 decodes prefix + branch suffix on
that prefill hit (not interleaved); each later turn decodes history + output + turn suffix on a
decode hit, submitted interleaved across groups (g0b0, g1b0, g2b0, g0b1, ...). Every turn's
cached_tokens is held to SGLang's assert (metrics/turn_hits.py; the rules are a seam, so a Mamba
server's checkpoint rules plug in): a short hit is kept, scored and reported with its expected
and actual values, and fails the helper as SGLang's assert fails the test.

Scoring goes past SGLang's: the kit replays only the last turn; kltui replays every turn (flush,
then `replay_batch` replays per request, as `_replay_and_compare_kl`), so each turn is one sample
with its group, branch and turn, and a divergence is placed on the turn that shows it. The last
turn's per-sample k3 means are exactly the kit's `kl_divs`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import numpy as np

from kltui.engines.geometry import Source
from kltui.engines.identity import as_int
from kltui.engines.sglang_parse import GenResult
from kltui.engines.weights import is_loopback
from kltui.helpers.context import HelperContext
from kltui.helpers.multiturn_plan import (
    Plan,
    build_plan,
    interleave_order,
    sample_of,
    where,
)
from kltui.helpers.phases import Run, helper
from kltui.metrics.hit_rules import HitRule
from kltui.metrics.summary import SummaryStatus
from kltui.metrics.turn_hits import HitExpectation, HitRules, dense_rules, mamba_rules
from kltui.session.events import Event, Problem, SampleScored

# (sample, input, result, expectation) of one decoded turn
Turn = tuple[int, np.ndarray, GenResult, HitExpectation]


def vocab_of(ctx: HelperContext) -> tuple[int, str]:
    """The server's vocabulary size and where it was read: the model's config.json (a folder on
    this machine), else one past the largest prompt id (the ids the server's tokenizer gave)."""
    path = ctx.server_info.get("model_path")
    if isinstance(path, str) and is_loopback(ctx.server):
        try:
            raw = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
            n = as_int(raw.get("vocab_size")) if isinstance(raw, dict) else None
            if n is not None and n > 1:
                return n, "config.json of model_path"
        except (OSError, ValueError):
            pass
    top = max((int(p.max()) for p in ctx.prompts if p.size), default=1)
    return top + 1, "the prompt set's largest id + 1 (no config.json readable)"


def rules_of(ctx: HelperContext) -> HitRules:
    """The hit rules for this server: on a Mamba server (its state geometry, --hit-rule engine)
    kl_multiturn_utils' checkpoint asserts with its chunk and track interval, else SGLang's
    dense asserts with its page size."""
    m = ctx.geometry.mamba
    chunk, grid = (m.chunk_size if m else None), ctx.geometry.track_grid()
    if ctx.hit_rule is HitRule.ENGINE and chunk and grid and chunk.value > 0:
        interval = m.track_interval if m else None
        source = f"{chunk.source}, {interval.source if interval else Source.DERIVED}"
        return mamba_rules(chunk.value, grid, source)
    page = as_int(ctx.server_info.get("page_size"))
    return dense_rules(page if page is not None and page > 0 else 1)


@helper("multiturn")
async def multiturn(ctx: HelperContext, run: Run) -> AsyncIterator[Event]:
    """Groups x branches over a shared prefix, several turns, interleaved; every turn scored."""
    shape = ctx.multiturn
    ctx.temperature, ctx.sampling_seed = shape.temperature, shape.sampling_seed
    run.n_samples = shape.conversations * shape.turns
    vocab, vocab_source = vocab_of(ctx)
    rules = rules_of(ctx)
    settings = {
        **shape.to_json(),
        "max_new_tokens": ctx.max_new_tokens,
        "vocab": vocab,
        "vocab_source": vocab_source,
        "hit_rules": rules.source,
    }
    async for ev in run.begin(settings):
        yield ev
    if ctx.server_info.get("disable_radix_cache"):
        why = "multiturn is vacuous: the server runs with disable_radix_cache=true"
        yield Problem(ctx.server, why, fatal=False, helper=run.helper)
        yield run.finished(status=SummaryStatus.VACUOUS, reason=why)
        return
    try:
        plan = build_plan(shape, [p.tolist() for p in ctx.prompts], vocab)
    except ValueError as err:
        yield Problem(ctx.server, str(err), fatal=False, helper=run.helper)
        yield run.finished(status=SummaryStatus.INVALID, reason=str(err))
        return
    run.extra["id_bound"] = plan.max_id
    turns: list[Turn] = []
    async for ev in _turns(ctx, run, plan, rules, turns):
        yield ev
    short = [t for t in turns if not t[3].holds(t[2].cached_tokens)]
    run.extra.update({"hits": len(turns) - len(short), "hit_ratio": _ratio(turns, short)})
    if short:
        run.extra["status"] = SummaryStatus.FAIL
        s, _, r, e = short[0]
        g, b, t = where(shape, s)
        run.extra["hit_failure"] = (
            f"{len(short)} of {len(turns)} turns short of the asserted hit (g{g}b{b} turn {t}: "
            f"cached_tokens {r.cached_tokens}, expected {_expected(e)})"
        )
        yield Problem(ctx.server, run.extra["hit_failure"], fatal=False, helper=run.helper)
    async for ev in _replay(ctx, run, turns):
        yield ev
    yield run.finished()


def _ratio(turns: list[Turn], short: list[Turn]) -> float:
    return (len(turns) - len(short)) / len(turns) if turns else 0.0


def _expected(e: HitExpectation) -> str:
    if e.allowed:
        return "one of " + ", ".join(map(str, e.allowed))
    return f"in [{e.low}, {'...' if e.high is None else e.high}]"


async def _turns(
    ctx: HelperContext, run: Run, plan: Plan, rules: HitRules, turns: list[Turn]
) -> AsyncIterator[Event]:
    """Flush, warm the prefixes, then every turn of every conversation, each held to its rule."""
    shape = ctx.multiturn
    n = shape.conversations
    convs = list(range(n))
    async for ev in run.flush():
        yield ev
    warm: list[GenResult] = []
    prefixes = [np.asarray(p, dtype=np.int64) for p in plan.prefixes]
    async for ev in run.generate("warm", prefixes, convs, warm, max_new_tokens=0, logprobs=False):
        yield ev
    inputs = [np.asarray(f, dtype=np.int64) for f in plan.firsts]
    expect = [rules.prefill(len(p)) for p in plan.prefixes]
    order = interleave_order(n, shape.branches) if shape.interleave else None
    outs: list[np.ndarray] = []
    for t in range(shape.turns):
        if t:
            sfx = plan.turn_suffixes[t - 1]
            inputs = [np.concatenate([inputs[i], outs[i], sfx[i]]) for i in convs]
        sent = convs if t == 0 or order is None else order  # turn 0 is never interleaved
        out: list[GenResult] = []
        samples = [sample_of(shape, i, t) for i in sent]
        async for ev in run.generate(
            "decode", [inputs[i] for i in sent], samples, out, max_new_tokens=ctx.max_new_tokens
        ):
            yield ev
        by_conv = {sent[r.index]: r for r in out}
        outs = [by_conv[i].output_ids.astype(np.int64) for i in convs]
        for i in convs:
            turns.append((sample_of(shape, i, t), inputs[i], by_conv[i], expect[i]))
        expect = [rules.decode(inputs[i].size, outs[i].size) for i in convs]


async def _replay(ctx: HelperContext, run: Run, turns: list[Turn]) -> AsyncIterator[Event]:
    """Every turn replayed as one fresh prefill, `replay_batch` per request, each after a flush
    (the kit's `_replay_and_compare_kl`); each SampleScored tagged with its place and rule."""
    shape = ctx.multiturn
    by_sample = {s: e for s, _, _, e in turns}
    items = sorted(((s, x, r) for s, x, r, _ in turns), key=lambda it: it[0])
    size = max(1, shape.replay_batch)
    for start in range(0, len(items), size):
        async for ev in run.replay_and_score(items[start : start + size]):
            if isinstance(ev, SampleScored) and ev.helper == run.helper:
                g, b, t = where(shape, ev.sample)
                ev = replace(
                    ev, group=g, branch=b, turn=t, hit_expected=by_sample[ev.sample].to_dict()
                )
            yield ev
