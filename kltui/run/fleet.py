"""Fleet mode: every worker behind an SGLang router, checked directly by its own URL.

The router is asked for its workers (`GET /workers`); the regular ones become the servers of
one run (same prompt set, same helpers, the API key and flush consent per worker as for
`--server`); prefill/decode-disaggregated workers are listed and left out with the reason. The
run's `RunStarted.config["fleet"]` records the router and its workers; a worker that joined or
left the router while the run went is reported before the run's verdict. What the replicas'
numbers say about each other is `readings/fleet.py`'s.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from kltui import __version__
from kltui.engines.errors import EngineError
from kltui.engines.router import PD_NOTE, RouterWorker, probe_router, router_refusal
from kltui.errors import UsageError
from kltui.readings.fleet import fleet
from kltui.session.events import Event, Problem, RunFinished, RunStarted, RunVerdict
from kltui.session.store import SessionStore

# run_session's shape, passed in (run/runner.py calls this module: no import cycle)
Runner = Callable[..., AsyncIterator[Event]]
ROUTER_TIMEOUT_S = 30.0


async def list_fleet(cfg: Any) -> list[RouterWorker]:
    """The router's workers; a URL that is no router is a one-line usage error."""
    workers = await probe_router(
        cfg.router, cfg.server_api_key(), min(cfg.request_timeout, ROUTER_TIMEOUT_S)
    )
    if workers is None:
        raise UsageError(
            f"--router {cfg.router}: GET /workers answered no worker list, so this is not an "
            "SGLang router (for one server use --server)"
        )
    return sorted(workers, key=lambda w: w.url)  # the router's own order changes between asks


def fleet_record(router: str, workers: list[RouterWorker]) -> dict[str, Any]:
    """What the recording keeps of the fleet: the router, each worker and whether it ran."""
    return {
        "router": router,
        "workers": [
            w.to_record()
            | {"tested": not w.disaggregated, "note": PD_NOTE if w.disaggregated else None}
            for w in workers
        ],
    }


def _changes(before: list[RouterWorker], after: list[RouterWorker]) -> list[str]:
    """Workers that joined, left or changed health on the router while the run went."""
    was = {w.url: w for w in before}
    now = {w.url: w for w in after}
    out = [f"{u} left the router during the run" for u in was if u not in now]
    out += [
        f"{u} joined the router during the run (not checked: run again to include it)"
        for u in now
        if u not in was
    ]
    for u, w in now.items():
        old = was.get(u)
        if old is not None and old.is_healthy and w.is_healthy is False:
            out.append(f"{u}: the router marked it unhealthy during the run")
    return out


async def _refused(cfg: Any, message: str) -> AsyncIterator[Event]:
    """A fleet run that never reached a worker: the router's fault, as a run with no server."""
    router = cfg.router
    yield RunStarted(
        run_id=uuid.uuid4().hex[:12],
        started_at=time.time(),
        config=cfg.to_record() | {"fleet": fleet_record(router, [])},
        servers=[],
        prompt_set={},
        kltui_version=__version__,
    )
    yield Problem(router, f"{message} (phase: connect)", fatal=True, phase="connect")
    yield RunFinished({"helpers": {}, "problems": 1}, RunVerdict.ERROR)


async def fleet_session(
    cfg: Any,
    run: Runner,
    before_flush: Callable[..., Awaitable[bool]] | None = None,
    *,
    live_view: bool = False,
    keep: list | None = None,
) -> AsyncIterator[Event]:
    """The event stream of a fleet run: `run` (run_session) over the router's regular workers
    (`keep` collects their helper runs, as run_session's does)."""
    try:
        workers = await list_fleet(cfg)
    except EngineError as e:
        async for ev in _refused(cfg, f"router {e.message}"):
            yield ev
        return
    tested = [w for w in workers if not w.disaggregated]
    if not tested:
        kinds = ", ".join(sorted({w.worker_type for w in workers})) or "none"
        raise UsageError(
            f"--router {cfg.router}: no worker kltui can check (worker types: {kinds}); "
            + (PD_NOTE if workers else "the router lists no worker")
        )
    # the workers are measured through the driver's bounded merge (run/merge.py)
    sub = dataclasses.replace(
        cfg, servers=[w.url for w in tested], concurrency=cfg.fleet_concurrency
    )
    record = fleet_record(cfg.router, workers)
    # under --fleet-require identical the verdict needs the replicas' numbers: kept here as
    # the views keep them, so the recording's verdict is the one every view shows
    seen = SessionStore() if cfg.fleet_require == "identical" else None
    async for ev in run(sub, before_flush, live_view=live_view, keep=keep):
        if isinstance(ev, RunStarted):
            ev = dataclasses.replace(ev, config={**ev.config, "fleet": record})
        elif isinstance(ev, RunFinished):
            for note in await _recheck(cfg, workers):
                yield Problem(cfg.router, note, fatal=False, phase="fleet")
            if seen is not None:
                ev = gated(ev, seen)
        if seen is not None:
            seen.apply(ev)
        yield ev


def gated(ev: RunFinished, store: SessionStore) -> RunFinished:
    """The run's end under `--fleet-require identical`: a passing run whose replicas are not
    all bit-identical (or not all compared) fails; an error or interruption stays what it is."""
    f = fleet(store)
    if ev.verdict != "pass" or f is None or not f.failed:
        return ev
    return dataclasses.replace(ev, verdict=RunVerdict.FAIL)


async def _recheck(cfg: Any, before: list[RouterWorker]) -> list[str]:
    """What changed on the router since the run began ([] when it cannot be asked now)."""
    try:
        after = await list_fleet(cfg)
    except (EngineError, UsageError) as e:
        return [f"the router could not be asked for its workers after the run ({e})"]
    return _changes(before, after)


async def refuse_routers(urls: list[str], api_key: str | None) -> None:
    """Before a TUI opens on `--server URL`: a router is refused in one line, as `check` does.
    A URL that cannot be reached now is left to the run (it retries)."""
    for url in urls:
        try:
            workers = await probe_router(url, api_key, timeout=5.0)
        except EngineError:
            continue
        if workers is not None:
            raise UsageError(router_refusal(url, workers))


__all__ = ["fleet_record", "fleet_session", "gated", "list_fleet", "refuse_routers"]
