"""Drives a whole run: connect, identify servers, build the prompt set, run helpers, and yield
the event stream that every consumer (TUI, headless, recorder) reads."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np

from kltui import __version__
from kltui.engines.errors import EngineError
from kltui.engines.geometry import Source, geometry_of
from kltui.engines.identity import ServerIdentity, identity_of
from kltui.engines.model_config import ModelConfig, ModelConfigError, load_model_config
from kltui.engines.router import probe_router, router_refusal
from kltui.engines.sglang import SGLangClient
from kltui.engines.weights import local_weights
from kltui.errors import UsageError
from kltui.helpers.context import HelperContext, PhaseError
from kltui.helpers.extras import after_gate
from kltui.helpers.phases import Run
from kltui.metrics.hit_rules import HitRule
from kltui.metrics.summary import Summary
from kltui.readings.identity import ConflictKind, conflict
from kltui.registry import HELPERS, Helper, Scope
from kltui.run.config import RunConfig, resolve_threshold
from kltui.run.fleet import fleet_session
from kltui.run.merge import bounded_merge, guarded
from kltui.run.prompt_ids import build_prompt_set, check_separator
from kltui.run.prompts import PromptSet
from kltui.run.refusal import refused
from kltui.run.tokenizer import LocalTokenizer, PendingTokenizer
from kltui.session.events import (
    Event,
    HelperFinished,
    Problem,
    RunFinished,
    RunStarted,
    RunVerdict,
)

# Asked once per server before its first flush (the TUI's question); False stops the run.
BeforeFlush = Callable[[SGLangClient], Awaitable[bool]]


async def run_session(
    cfg: RunConfig,
    before_flush: BeforeFlush | None = None,
    *,
    live_view: bool = False,
    keep: list[Run] | None = None,
) -> AsyncIterator[Event]:
    """The event stream for one run. Never raises for server faults: they become Problems.

    `before_flush(client)` is awaited for each server before any helper flushes it; when it
    answers False the run stops there, as interrupted, with nothing flushed.
    `live_view`: something shows the decode as it happens (the TUI), so it is streamed unless
    the config says otherwise; `kltui check` shows nothing live and sends SGLang's requests.
    `keep`: every helper run that may fetch drill-down extras is appended to it, so that a
    sample opened after the run can be fetched on demand (`helpers.extras.for_opened`).
    """
    if cfg.router:
        async for ev in fleet_session(
            cfg, _servers_session, before_flush, live_view=live_view, keep=keep
        ):
            yield ev
        return
    async for ev in _servers_session(cfg, before_flush, live_view=live_view, keep=keep):
        yield ev


async def _servers_session(
    cfg: RunConfig,
    before_flush: BeforeFlush | None = None,
    *,
    live_view: bool = False,
    keep: list[Run] | None = None,
) -> AsyncIterator[Event]:
    """run_session on the servers named in `cfg` (a fleet run's workers included)."""
    if not cfg.servers:
        raise UsageError("no server given: use --server HOST:PORT")
    api_key = cfg.server_api_key()
    clients = [SGLangClient(u, api_key, timeout=cfg.request_timeout) for u in cfg.servers]
    try:
        async for ev in _run(cfg, clients, before_flush, live_view, keep):
            yield ev
    finally:
        for c in clients:
            await c.aclose()


async def _identify(
    client: SGLangClient, api_key: str | None, model_config: ModelConfig | None = None
) -> tuple[ServerIdentity, dict]:
    """A server's identity and /server_info once it is healthy; a router is refused."""
    await client.wait_healthy()
    identity, info = await client.identify_with_info(model_config)
    if not info.get("model_path"):
        # every SGLang server reports its model_path; a router's /get_server_info does not
        workers = await probe_router(client.url, api_key, timeout=min(client.timeout, 60))
        if workers is not None:
            raise UsageError(router_refusal(client.url, workers))
    return identity, info


@dataclass
class _Connected:
    """What the start of a run found: every server's identity, the /server_info of those that
    answered, the prompt set (None when it could not be built) and the problems so far."""

    servers: list[dict] = field(default_factory=list)
    infos: dict[str, dict] = field(default_factory=dict)
    live: list[SGLangClient] = field(default_factory=list)
    pset: PromptSet | None = None
    problems: list[Problem] = field(default_factory=list)
    reference: dict | None = None  # the hf: reference's identity (run/hf_judge.py)


async def _connect(cfg: RunConfig, clients: list[SGLangClient]) -> _Connected:
    """Identifies every server (and the baseline), refuses different models, builds the
    prompt set on the first server that answered."""
    found = _Connected()
    # Every server (and the baseline) at once: SGLang's /health runs a one-token generate and
    # polls for it once a second, so each answer takes a second or more; one after another,
    # a fleet of N replicas waited N seconds before anything was measured.
    baseline = None
    if cfg.baseline:  # vLLM's client loads only with a baseline
        from kltui.engines.vllm import identify_vllm

        timeout = min(cfg.request_timeout, 60)
        baseline = identify_vllm(cfg.baseline, cfg.baseline_api_key(), timeout=timeout)
    model_config = _model_config(cfg)
    results = await asyncio.gather(
        *(_identify(c, cfg.server_api_key(), model_config) for c in clients),
        *([baseline] if baseline is not None else []),
        return_exceptions=True,
    )
    for c, got in zip(clients, results[: len(clients)], strict=True):  # in the order given
        if isinstance(got, EngineError):
            found.servers.append(
                ServerIdentity.unreachable(c.url, "sglang", got.message, got.kind).record()
            )
            found.problems.append(
                Problem(c.url, f"{got.message} (phase: connect)", fatal=True, phase="connect")
            )
            continue
        if isinstance(got, BaseException):
            raise got  # a router refused (UsageError), or a fault of kltui's own
        identity, found.infos[c.url] = got
        found.servers.append(identity.record())
    if baseline is not None:
        # the baseline's identity is recorded even when unreachable; cross_engine reports it
        got = results[-1]
        if isinstance(got, BaseException):
            raise got
        found.servers.append(got.record())
    found.live = [c for c in clients if c.url in found.infos]
    live = [s for s in found.servers if s.get("url") in found.infos]
    await refuse_incomparable(
        live, fleet=bool(cfg.router), allow_different_models=cfg.allow_different_models
    )
    if cfg.hf_baseline:  # the HF reference's modules load only with one
        from kltui.run.hf_judge import connect_reference

        found.reference = await connect_reference(cfg, found.servers, [c.url for c in found.live])
    return found


def _model_config(cfg: RunConfig) -> ModelConfig | None:
    """--model-config, read (checked before the run; a file changed since is refused here)."""
    if not cfg.model_config:
        return None
    try:
        return load_model_config(cfg.model_config, Source.FLAG)
    except ModelConfigError as e:
        raise UsageError(f"--model-config {e}") from None


async def refuse_incomparable(
    live: list[dict], *, fleet: bool = False, allow_different_models: bool = False
) -> None:
    """Before anything is flushed or measured, for every front end that compares servers
    (check, a fleet, ablate's attach mode): one server under two URLs, then another model
    (`readings/identity.py`), each a UsageError naming both servers and what shows it. The
    weights are hashed only for a comparison: one server is not read twice."""
    _refuse_same_server(live, fleet=fleet)
    if len(live) > 1:
        await _hash_weights(live)
    if not allow_different_models:
        _refuse_different_models(live)


async def _hash_weights(servers: list[dict]) -> None:
    """Adds to each server's identity the hash of its weights folder on this machine, or why
    there is none (engines/weights.py). One after the other: servers of one folder share the
    cached hash instead of reading it at once."""
    for s in servers:
        weights = await asyncio.to_thread(local_weights, str(s.get("url")), s.get("model_path"))
        s.update(weights.record())


def _refuse_same_server(servers: list[dict], *, fleet: bool) -> None:
    """Before anything is flushed: one server under two URLs (an SSH tunnel, a port forward, a
    second host name) would be compared with itself, and agreeing with itself proves nothing."""
    seen: list[ServerIdentity] = []
    for s in servers:
        ident = ServerIdentity.of(s)
        for other in seen:
            c = conflict(other, ident)
            if c is not None and c.kind is ConflictKind.SAME_PROCESS:
                fix = "the router lists it twice" if fleet else "name each server once"
                raise refused(c, fix)
        seen.append(ident)


def _run_started(cfg: RunConfig, found: _Connected, live_view: bool) -> RunStarted:
    """The run's first event: its config (as it ran), servers and prompt set."""
    return RunStarted(
        run_id=uuid.uuid4().hex[:12],
        started_at=time.time(),
        # what the run did: the `stream` option's null ("only in the TUI") resolved
        config=cfg.to_record()
        | {
            "stream": cfg.streams(live_view),
            "stream_interval": cfg.stream_interval_for() if cfg.streams(live_view) else None,
        },
        servers=found.servers,
        prompt_set=found.pset.to_json() if found.pset else {},
        kltui_version=__version__,
    )


async def _declined(
    cfg: RunConfig, live: list[SGLangClient], before_flush: BeforeFlush | None
) -> SGLangClient | None:
    """Asks every server's flush question up front (so a long run never waits on one midway);
    the first server whose flush was declined, or None."""
    if before_flush is None or not any(n in HELPERS for n in cfg.helpers):
        return None
    for c in live:
        if not await before_flush(c):
            return c
    return None


@dataclass
class _Tally:
    """The helpers' summaries so far, and whether a fatal fault happened (for the verdict)."""

    summaries: list[Summary] = field(default_factory=list)
    fatal: bool = False
    # the helper runs that may fetch extras, for run_session's `keep` (None: not kept)
    kept: list[Run] | None = None


async def _server_helpers(
    cfg: RunConfig,
    c: SGLangClient,
    specs: list[Helper],
    ctx_of: Callable[[Helper], HelperContext],
    tally: _Tally,
) -> AsyncIterator[Event]:
    """One server's helpers in order, then the drill-down's extras of those that ran through."""
    gated: list[Run] = []
    faulted = False
    for spec in specs:
        ctx = ctx_of(spec)
        run = Run(ctx, spec.name)
        try:
            async for ev in spec.starter()(ctx, run):
                if isinstance(ev, HelperFinished):
                    tally.summaries.append(Summary.of(ev.summary))
                yield ev
            if spec.extras:
                gated.append(run)
                if tally.kept is not None:
                    tally.kept.append(run)
        except PhaseError as e:
            tally.fatal = faulted = True
            # the source names the server; the message names helper, phase and fault
            yield Problem(
                e.err.server,
                f"[{e.helper}/{e.phase}] {e.err.message}",
                fatal=True,
                helper=e.helper,
                phase=e.phase,
            )
            if e.finished is not None:
                tally.summaries.append(Summary.of(e.finished.summary))
                yield e.finished
            if e.err.kind in ("unreachable", "server-restarted"):
                break  # the next helper would only repeat the same fault
    if cfg.batch_sizes and not cfg.stressed and not faulted:
        from kltui.run.batch_sizes import batch_probe

        async for ev in batch_probe(cfg.batch_sizes, specs, ctx_of):
            yield ev
    # The gate is decided; now the drill-down's extras, from requests of their own.
    # (not after a fault of this server: the gate's error is the news, not the extras)
    if gated and not faulted:
        async for ev in after_gate(gated, cfg.extras, cfg.top_k):
            yield ev


async def _prompt_set(cfg: RunConfig, found: _Connected, tok: PendingTokenizer | None) -> None:
    """The run's prompts, tokenized on the first live server (a fatal Problem if it cannot)."""
    if not found.live:
        return
    first = found.live[0]
    try:
        found.pset = await build_prompt_set(cfg, first, found.infos[first.url], tok)
    except EngineError as e:
        found.problems.append(
            Problem(e.server, f"{e.message} (phase: tokenize)", fatal=True, phase="tokenize")
        )


def _cancelled(declined: SGLangClient) -> Problem:
    """The user declined the first /flush_cache: nothing ran."""
    return Problem(
        declined.url,
        "run cancelled before the first /flush_cache: nothing was flushed or "
        "measured (r runs it again and asks again)",
        fatal=False,
        phase="flush",
    )


async def _run(
    cfg: RunConfig,
    clients: list[SGLangClient],
    before_flush: BeforeFlush | None,
    live_view: bool = False,
    keep: list[Run] | None = None,
) -> AsyncIterator[Event]:
    """One run on `clients`: connect, RunStarted, every helper per server, RunFinished."""
    found = await _connect(cfg, clients)
    tok = PendingTokenizer(cfg.tokenizer) if cfg.tokenizer else None
    await _prompt_set(cfg, found, tok)
    check_separator(cfg, found.live, found.infos, tok)
    yield _run_started(cfg, found, live_view)
    for p in found.problems:
        yield p
    pset = found.pset
    if pset is None:
        yield RunFinished({"helpers": {}, "problems": len(found.problems)}, RunVerdict.ERROR)
        return
    for note in pset.notes:
        yield Problem("prompts", note, fatal=False)
    declined = await _declined(cfg, found.live, before_flush)
    if declined is not None:
        yield _cancelled(declined)
        yield RunFinished({"helpers": 0, "cancelled": "flush declined"}, RunVerdict.INTERRUPTED)
        return
    tally = _Tally(fatal=bool(found.problems), kept=keep)

    def server_run(c: SGLangClient, specs: list[Helper]) -> Callable[[], AsyncIterator[Event]]:
        info = found.infos[c.url]

        geometry = geometry_of(identity_of(found.servers, c.url))

        def ctx_of(spec: Helper) -> HelperContext:
            ctx = helper_context(cfg, spec, c, info, pset, live_view, tok)
            ctx.geometry = geometry
            if spec.scope == Scope.REFERENCE:
                from kltui.run.hf_judge import reference_plan

                ctx.reference = reference_plan(cfg, found.servers, found.reference)
            return ctx

        # a server that breaks in an unforeseen way is one fatal Problem; the others go on
        return lambda: guarded(
            c.url, _stressed(cfg, c, info, pset, _server_helpers(cfg, c, specs, ctx_of, tally))
        )

    plan = _plan(cfg, found.live)
    # a fleet's workers run at once (at most --fleet-concurrency); the baseline's entry, which
    # reuses the first server, runs after them
    per_server = [(c, specs) for c, specs in plan if all(h.scope == Scope.SERVER for h in specs)]
    rest = plan[len(per_server) :]
    # at most RunConfig.concurrency servers at once (a fleet run's is its fleet_concurrency)
    merged = bounded_merge([server_run(c, specs) for c, specs in per_server], cfg.concurrency)
    async for ev in merged:
        tally.fatal = tally.fatal or (isinstance(ev, Problem) and ev.fatal)
        yield ev
    for c, specs in rest:
        async for ev in server_run(c, specs)():
            tally.fatal = tally.fatal or (isinstance(ev, Problem) and ev.fatal)
            yield ev
    yield RunFinished(
        {"helpers": len(tally.summaries)}, RunVerdict.of(tally.summaries, tally.fatal)
    )


def _stressed(
    cfg: RunConfig,
    c: SGLangClient,
    info: dict,
    pset: PromptSet,
    inner: AsyncIterator[Event],
) -> AsyncIterator[Event]:
    """One server's helpers; in the stressed run of --stress, with its background traffic
    (run/stress.py), seeded by the run's seed and the server's place."""
    if not (cfg.stress and cfg.stressed):
        return inner
    from kltui.run.stress import Traffic
    from kltui.run.stress_levels import LEVELS
    from kltui.run.under_load import under_load

    traffic = Traffic(
        c.url,
        LEVELS[cfg.stress],
        list(pset.ids),
        info,
        seed=cfg.seed + cfg.servers.index(c.url) if c.url in cfg.servers else cfg.seed,
        max_new_tokens=cfg.max_new_tokens,
        api_key=cfg.server_api_key(),
        timeout=cfg.request_timeout,
    )
    return under_load(traffic, inner)


def _refuse_different_models(servers: list[dict]) -> None:
    """Before anything is flushed or measured: another model makes every comparison moot."""
    first = ServerIdentity.of(servers[0]) if servers else None
    for s in servers[1:]:
        c = conflict(first, ServerIdentity.of(s)) if first is not None else None
        if c is not None and c.kind is ConflictKind.DIFFERENT_MODEL:
            raise refused(c, "--allow-different-models runs them anyway")


def _plan(cfg: RunConfig, live: list[SGLangClient]) -> list[tuple[SGLangClient, list[Helper]]]:
    """Every helper on each server, then the helpers comparing the first one with --baseline."""
    chosen = [HELPERS[n] for n in cfg.helpers if n in HELPERS]
    plan = [(c, [h for h in chosen if h.scope == Scope.SERVER]) for c in live]
    baseline = [h for h in chosen if h.scope == Scope.BASELINE]
    if cfg.baseline and live and baseline:
        plan.append((live[0], baseline))
    reference = [h for h in chosen if h.scope == Scope.REFERENCE]
    if cfg.hf_baseline and live and reference:
        plan.append((live[0], reference))
    return plan


def helper_context(
    cfg: RunConfig,
    spec: Helper,
    client: SGLangClient,
    info: dict,
    pset: PromptSet,
    live_view: bool = False,
    tok: LocalTokenizer | PendingTokenizer | None = None,
) -> HelperContext:
    """What one helper needs for one server: the run's settings and this server's threshold."""
    thr = resolve_threshold(
        cfg,
        spec.name,
        model=info.get("model_path"),
        tp=info.get("tp_size"),
        deterministic=bool(info.get("enable_deterministic_inference")),
    )
    return HelperContext(
        client=client,
        prompts=pset.ids,
        max_new_tokens=cfg.max_new_tokens,
        temperature=cfg.temperature,
        threshold=thr.kl_div,
        tail_threshold=thr.tail_threshold,
        stream=cfg.streams(live_view),
        stream_interval=cfg.stream_interval_for(),
        incremental=bool(info.get("incremental_streaming_output")),
        flush_timeout=cfg.flush_timeout,
        min_cache_hit_ratio=cfg.min_cache_hit_ratio,
        hit_rule=HitRule(cfg.hit_rule),
        # SGLang reads this with os.environ.get: any non-empty value (even "0") skips the asserts
        skip_hit_assert=bool(os.environ.get("SGLANG_TEST_SKIP_CACHE_HIT_ASSERT")),
        server_info=info,
        top_k=cfg.top_k,
        threshold_source=thr.source,
        baseline_url=cfg.baseline if spec.scope == Scope.BASELINE else None,
        # the baseline's own key only: the SGLang servers' key never goes to it
        baseline_api_key=cfg.baseline_api_key() if spec.scope == Scope.BASELINE else None,
        baseline_log=cfg.baseline_log if spec.scope == Scope.BASELINE else None,
        request_timeout=cfg.request_timeout,
        tokenizer=tok,
        comma_ids=np.asarray(cfg.separator_ids, dtype=np.int64) if cfg.separator_ids else None,
        comma_source="--separator-ids" if cfg.separator_ids else "",
        multiturn=cfg.multiturn_shape(),
    )
