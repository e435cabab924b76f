"""`kltui ablate`'s sweep: every configuration started (or attached to), measured and stopped.

Launch mode, for a base command and its `--vary` knobs:
1. before anything starts, the command's own `--help` (`help_command`: the words up to the
   module or script and its subcommands, then `--help`) lists the installed server's flags, and a
   knob it does not list is refused (`knobs.check_known`, exit 2);
2. `plan.plan` gives the base and one configuration per changed value; with `--parallel N` an
   SGLang command gets `--mem-fraction-static` of 0.85/N unless it sets one, and the servers
   start one at a time (each sizes its cache from the memory free while it loads) while their
   helper runs overlap;
3. each configuration: its server started by `launch.LaunchedServer` (log `<name>.log` in the
   sweep folder, live progress), the helpers run on it by `RunDriver` with the sweep's one
   `RunConfig` (the same prompt set, seed and ids everywhere; recording `<name>.kltui.jsonl`),
   its server stopped. A configuration that fails (never healthy, exits, dies mid-run, a knob
   value refused) is one line naming it and its log's last lines; the sweep goes on;
4. with `--pairs`, the knobs that moved the result most (`plan.pairs`) two at a time.
Attach mode: running servers (the first is the base), told apart by /server_info (`plan.attach`).
The sweep folder `ablate-<id>/` holds every log, recording and `ablation.json`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from kltui.ablate.knobs import (
    Vary,
    apply,
    check_known,
    installed_flags,
    parse_vary,
    switch_flags,
)
from kltui.ablate.plan import Config, Plan, attach, pairs, plan
from kltui.ablate.sweep import FAILED, INTERRUPTED, MEASURED, TAIL_LINES, ConfigRun, Sweep
from kltui.engines.errors import EngineError
from kltui.engines.http import sglang_url
from kltui.engines.sglang import SGLangClient
from kltui.errors import UsageError
from kltui.launch.server import LaunchedServer, LaunchError
from kltui.readings.ablation_outcome import reading
from kltui.readings.stress import StressReading
from kltui.run.config import RunConfig
from kltui.run.driver import RunDriver, RunOutcome, RunView
from kltui.run.runner import refuse_incomparable
from kltui.run.sweep_manifest import write_manifest
from kltui.session.recording import default_runs_dir
from kltui.untrusted import one_line

# SGLang's own default fraction of GPU memory for weights and KV cache is about this; N
# servers on one GPU share it
MEM_FRACTION_TOTAL = 0.85
MEM_FLAG = "--mem-fraction-static"
HELP_TIMEOUT_S = 300.0
ALIVE_POLL_S = 0.25


class SweepError(OSError):
    """The sweep cannot go on: the base did not start, or a server to attach to does not
    answer. One line; exit code 3 (`errors.exception_exit` of an OSError)."""


# --------------------------------------------------------------------------- before starting
def help_command(argv: list[str]) -> list[str]:
    """The launch command's `--help`: the program, the module (`-m M`) or script (`*.py`) and
    the subcommand words after it (`kltui.reference serve`), then `--help`; the server's
    options are left out, so nothing of the sweep's settings can make --help fail."""
    if not argv:
        raise UsageError("--launch: the command is empty")
    i = 1
    if os.path.basename(argv[0]).startswith("python"):
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "-m":
            i += 1  # interpreter options (-E, -u, -X dev is not supported here)
        if i < len(argv) and argv[i] == "-m":
            i += 2
        elif i < len(argv):
            i += 1  # the script
    while i < len(argv) and not argv[i].startswith("-"):
        i += 1  # subcommands: `serve`, `launch_server`
    return [*argv[:i], "--help"]


def is_sglang(argv: list[str]) -> bool:
    """Whether a launch command starts SGLang (its module or program name says so)."""
    return any("sglang" in os.path.basename(w) for w in help_command(argv)[:-1])


def read_help(argv: list[str], timeout: float = HELP_TIMEOUT_S) -> str:
    """The text of the launch command's --help (SweepError when it cannot be had)."""
    cmd = help_command(argv)
    shown = one_line(" ".join(cmd), 160)
    try:
        done = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        raise SweepError(f"base: command not found: {one_line(cmd[0], 120)}") from None
    except PermissionError as e:
        raise SweepError(f"base: cannot run {one_line(cmd[0], 120)}: {e.strerror}") from None
    except subprocess.TimeoutExpired:
        raise SweepError(f"base: {shown} did not answer within {timeout:g} s") from None
    text = done.stdout if done.stdout.strip() else done.stderr
    if done.returncode != 0 and not installed_flags(text):
        tail = [ln.strip() for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        last = " | ".join(one_line(t, 200) for t in tail[-TAIL_LINES:])
        raise SweepError(
            f"base: {shown} exited with code {done.returncode}" + (f": {last}" if last else "")
        )
    return text


@dataclass(frozen=True)
class SweepSpec:
    """What one sweep is asked to do: the run options every configuration shares, and either
    a launch command with its varies or the servers to attach to."""

    cfg: RunConfig
    folder: Path
    launch: tuple[str, ...] = ()
    varies: tuple[str, ...] = ()
    servers: tuple[str, ...] = ()
    pairs: bool = False
    start_timeout: float = 600.0
    parallel: int = 1

    @property
    def mode(self) -> str:
        """launch or attach."""
        return "attach" if self.servers else "launch"


def prepare(
    spec: SweepSpec, flags: set[str] | None = None, switches: set[str] | None = None
) -> Plan:
    """The launch plan, every knob checked against the installed server's flags (`flags`,
    else read from its --help) before anything starts; a raw flag is a switch only when the
    --help shows it taking no value (`switches`, read with `flags`; else none)."""
    varies = [parse_vary(v) for v in spec.varies]
    if not varies:
        raise UsageError("nothing to vary: give at least one --vary KNOB=V1,V2")
    argv = list(spec.launch)
    if flags is None:
        text = read_help(argv, min(spec.start_timeout, HELP_TIMEOUT_S))
        flags, switches = installed_flags(text), switch_flags(text)
    known: tuple[Vary, ...] = check_known(varies, flags, switches or set())
    if (
        spec.parallel > 1
        and is_sglang(argv)
        and MEM_FLAG in flags
        and not any(w.split("=", 1)[0] == MEM_FLAG for w in argv)
    ):
        # N servers share one GPU: each gets its part of what one would take
        argv = apply(argv, MEM_FLAG, f"{MEM_FRACTION_TOTAL / spec.parallel:.3g}")
    p = plan(argv, known)
    if not p.singles:
        said = "; ".join(s.line() for s in p.skipped)
        raise UsageError(f"nothing to compare: {said}")
    return p


async def attach_plan(spec: SweepSpec) -> tuple[Config, ...]:
    """Attach mode: each server's /server_info read, the base first (SweepError naming a
    server that does not answer); then what `kltui check` refuses is refused here too, before
    anything is flushed: one server under two URLs, or another model or other weights (a
    UsageError naming both servers and both hashes)."""
    infos, records = [], []
    for url in spec.servers:
        client = SGLangClient(
            url, spec.cfg.server_api_key(), timeout=min(60.0, spec.cfg.request_timeout)
        )
        try:
            ident, info = await client.identify_with_info()
        except EngineError as e:
            raise SweepError(f"{url}: cannot read /server_info: {e}") from None
        finally:
            await client.aclose()
        infos.append((url, info))
        records.append(ident.record())
    await refuse_incomparable(records, allow_different_models=spec.cfg.allow_different_models)
    (base_url, base_info), *others = infos
    return attach(base_url, base_info, others)


# --------------------------------------------------------------------------- the view
class SweepView(Protocol):
    """What shows a sweep as it goes (the console of `kltui ablate`, the TUI's matrix)."""

    def planned(self, sweep: Sweep) -> None:
        """The sweep's configurations are known: at its start, and again when --pairs adds
        some (they are in `sweep.runs`, not run yet)."""
        ...

    def starting(self, k: int, n: int, run: ConfigRun) -> None:
        """Configuration k of n: its server is being started."""
        ...

    def progress(self, k: int, n: int, run: ConfigRun, seconds: float, line: str) -> None:
        """Its server is not healthy yet after `seconds`; `line`: its log's last line (raw)."""
        ...

    def started(self, k: int, n: int, run: ConfigRun) -> None:
        """Its server answers /health (or, in attach mode, its helpers begin)."""
        ...

    def run_view(self, k: int, n: int, run: ConfigRun) -> RunView:
        """The view of its helpers' run (a fresh store)."""
        ...

    def ended(self, k: int, n: int, run: ConfigRun) -> None:
        """It was measured, or failed (`run.error`), or was left out."""
        ...

    def stress_json(self, reading: StressReading) -> dict:
        """The --stress reading as the manifest keeps it (words/stress.stress_json)."""
        ...


def sweep_folder(parent: Path | None = None, now: float | None = None) -> Path:
    """A fresh `ablate-<date>-<time>-<pid>` folder in the runs folder (or `parent`)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now or time.time()))
    return (parent or default_runs_dir()) / f"ablate-{stamp}-{os.getpid()}"


def make_folder(folder: Path) -> None:
    """The sweep folder, new or empty (UsageError, one line, otherwise)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{folder}: cannot create the sweep folder ({e.strerror or e})") from None
    if any(folder.iterdir()):
        raise UsageError(f"{folder}: the sweep folder is not empty (a sweep is never overwritten)")


async def _watched(
    run: Callable[[], Awaitable[RunOutcome]], srv: LaunchedServer | None
) -> RunOutcome:
    """Run the helpers while watching their server: when it dies, the run is cancelled at once
    and the server's LaunchError raised (the helpers would otherwise wait on a dead socket)."""
    task = asyncio.ensure_future(run())
    if srv is None:
        return await task
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=ALIVE_POLL_S)
            if done:
                return task.result()
            try:
                srv.check_alive()
            except LaunchError:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise
    except asyncio.CancelledError:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        raise


async def _one(
    spec: SweepSpec,
    sweep: Sweep,
    run: ConfigRun,
    k: int,
    n: int,
    view: SweepView,
    starts: asyncio.Lock | None = None,
    started: Callable[[], None] | None = None,
):
    """One configuration: started, measured, stopped; a failure is its one line. `starts`
    serializes server starts between configurations run at once; `started` is called once its
    start has ended (up or failed)."""
    srv = None
    if run.config.server is not None:
        run.url = run.config.server
    else:
        async with starts or contextlib.nullcontext():
            up = await _start(spec, sweep, run, k, n, view, srv := _server(spec, sweep, run))
        if started is not None:
            started()
        if not up:
            return
    await _measure(spec, sweep, run, k, n, view, srv)


def _server(spec: SweepSpec, sweep: Sweep, run: ConfigRun) -> LaunchedServer:
    return LaunchedServer(
        list(run.config.argv),
        name=run.name,
        log_path=sweep.folder / run.log,
        start_timeout=spec.start_timeout,
    )


async def _start(
    spec: SweepSpec,
    sweep: Sweep,
    run: ConfigRun,
    k: int,
    n: int,
    view: SweepView,
    srv: LaunchedServer,
) -> bool:
    """Start the configuration's server; False (and its failure recorded) when it did not."""
    view.starting(k, n, run)
    t_start = time.monotonic()
    try:
        run.url = await srv.start(progress=lambda s, line: view.progress(k, n, run, s, line))
    except LaunchError as e:
        # the server's own time to fail (a timeout above all) is start time, not kltui's
        run.start_s = time.monotonic() - t_start
        run.failed(e)
        view.ended(k, n, run)
        return False
    except asyncio.CancelledError:
        # interrupted while it started: those seconds were its start too
        run.start_s = time.monotonic() - t_start
        raise
    run.start_s = srv.startup_s
    return True


async def _measure(
    spec: SweepSpec,
    sweep: Sweep,
    run: ConfigRun,
    k: int,
    n: int,
    view: SweepView,
    srv: LaunchedServer | None,
) -> None:
    """Run the helpers on the configuration's server (its URL set by now), then stop it."""
    url = run.url or ""
    view.started(k, n, run)
    t0 = time.monotonic()
    try:
        cfg = replace(spec.cfg, servers=[url], helpers=list(spec.cfg.helpers), ablate=None)
        driver = RunDriver(cfg, record=str(sweep.folder / run.recording))
        outcome = await _watched(lambda: driver.run(view.run_view(k, n, run)), srv)
        if outcome.error is None and driver.stress_next:
            # --stress: the helpers again under traffic; the pair's reading beside the result
            loud = await _watched(lambda: driver.run(view.run_view(k, n, run)), srv)
            run.stress = view.stress_json(loud.stress) if loud.stress is not None else None
        run.run_s = time.monotonic() - t0
        if srv is not None:
            srv.check_alive()  # died as the run ended: not a result
        if outcome.error is not None:
            run.failed(
                f"{run.name}: the helpers could not run: {one_line(str(outcome.error), 300)}"
            )
        else:
            run.status, run.store, run.verdict = MEASURED, outcome.store, outcome.verdict
    except LaunchError as e:
        run.failed(e)
    except asyncio.CancelledError:
        run.status = INTERRUPTED
        raise
    finally:
        if run.run_s is None:
            # cut short (interrupted, or its server died): the helpers' seconds all the same
            run.run_s = time.monotonic() - t0
        if srv is not None:
            t1 = time.monotonic()
            await srv.stop()
            run.stop_s = time.monotonic() - t1
        view.ended(k, n, run)


async def _run_all(spec: SweepSpec, sweep: Sweep, runs: list[ConfigRun], view: SweepView) -> None:
    """Each configuration of `runs`, `spec.parallel` at once; the base (when among them) must
    start first: when it cannot, nothing else runs."""
    n = len(sweep.runs)
    order = {id(r): i + 1 for i, r in enumerate(sweep.runs)}
    pending = list(runs)
    base = pending.pop(0) if pending and pending[0] is sweep.base else None
    if base is not None and (spec.parallel <= 1 or base.config.server is not None):
        await _settled([_one(spec, sweep, base, 1, n, view)])
        write_manifest(sweep)
        if sweep.base.status != MEASURED:
            return
        base = None
    sem = asyncio.Semaphore(spec.parallel)
    # Servers start one at a time even when they run at once: an engine sizes its KV cache
    # from the memory free while it loads, which a neighbour loading at the same moment takes
    # (seen on the H200: SGLang 0.5.17 at --mem-fraction-static 0.283 refused to start beside
    # another loading 8B server, "Raise --mem-fraction-static above 0.287"). What overlaps: a
    # server's helpers run while the next one loads, the base's included.
    starts = asyncio.Lock()
    base_up = asyncio.Event()  # the base's start has ended (up, or failed: nothing else runs)

    async def guarded(r: ConfigRun) -> None:
        if r is not base and base is not None:
            await base_up.wait()
            if base.status == FAILED or base.url is None:
                return
        async with sem:
            try:
                await _one(spec, sweep, r, order[id(r)], n, view, starts, base_up.set)
            finally:
                if r is base:  # cancelled or broken before its start ended: release the rest
                    base_up.set()
            write_manifest(sweep)

    await _settled([guarded(r) for r in ([base] if base is not None else []) + pending])


async def _settled(coros: list) -> None:
    """Run `coros` as tasks until each has ended. Cancelled (Ctrl-C, the TUI's q), each is
    cancelled once and waited for, however often the caller is cancelled meanwhile (its
    cleanup must finish: server stopped, status interrupted), unlike asyncio.gather."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    if not tasks:  # asyncio.wait refuses an empty set (--pairs with no pair to run)
        return
    try:
        await asyncio.wait(tasks)
    except asyncio.CancelledError:
        for t in tasks:
            t.cancel()
        while not all(t.done() for t in tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait(tasks)
        raise
    for t in tasks:
        t.result()  # a configuration's own error surfaces as before


async def run_sweep(
    spec: SweepSpec,
    view: SweepView,
    configs: tuple[Config, ...] | None = None,
    p: Plan | None = None,
    help_s: float = 0.0,
    t0: float | None = None,
) -> Sweep:
    """The whole sweep in `spec.folder` (which must be new or empty): `configs` in attach mode,
    else `p` (the plan of `prepare`) and, with --pairs, its pairs. `t0`: when the command
    began (time.monotonic; default now), so that the time split counts reading --help too.
    Cancellation (Ctrl-C) stops every server and keeps what was measured (`interrupted`)."""
    make_folder(spec.folder)
    sweep = Sweep(
        spec.folder,
        spec.mode,
        spec.launch,
        spec.varies,
        spec.pairs,
        spec.parallel,
        tuple(s.line() for s in p.skipped) if p is not None else (),
        help_s=help_s,
    )
    if t0 is not None:
        sweep._t0 = t0
    first = configs if configs is not None else p.configs if p is not None else ()
    if not first:
        raise UsageError("nothing to run: no configuration")
    sweep.add(first)
    write_manifest(sweep)
    view.planned(sweep)
    try:
        await _run_all(spec, sweep, list(sweep.runs), view)
        if spec.pairs and p is not None and sweep.base.status == MEASURED:
            combos = pairs(p, reading(sweep).movement())
            sweep.pairs_run = bool(combos)
            new = sweep.add(combos)
            write_manifest(sweep)
            if new:
                view.planned(sweep)
            await _run_all(spec, sweep, new, view)
    except asyncio.CancelledError:
        sweep.interrupted = True
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
    finally:
        sweep.end()
        write_manifest(sweep)
    return sweep


def attach_urls(servers: list[str]) -> list[str]:
    """The attach-mode servers as URLs (a bare HOST:PORT gets http://), at least two."""
    if len(servers) < 2:
        raise UsageError(
            "attach mode needs at least two --server URLs: the base first, then the servers to "
            "compare with it"
        )
    return [sglang_url(s)[0] for s in servers]
