"""`kltui check`'s console: Rich progress while running, tables and the verdict after. The runs
themselves are driven by `run/driver.RunDriver`; this module only views them (`ConsoleRuns`)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
)
from rich.text import Text

from kltui import fmt
from kltui.console import error_console, make_console
from kltui.engines.identity import ServerIdentity
from kltui.metrics.summary import Summary
from kltui.outputs.check_tables import print_cross, results_table, server_line
from kltui.outputs.hf_judge_console import print_reference
from kltui.outputs.hf_judge_rows import is_reference
from kltui.outputs.multiturn_console import print_multiturn
from kltui.outputs.reports.common import write_json
from kltui.readings.compare import RerunEquality
from kltui.readings.cross_server import ServerPair, cross_server
from kltui.readings.diagnosis import diagnose
from kltui.readings.fleet import fleet
from kltui.readings.fleet_model import Fleet
from kltui.readings.identity import model_check
from kltui.readings.stress import StressReading
from kltui.registry import helper as registered
from kltui.registry import same_engine
from kltui.run.config import RunConfig
from kltui.run.driver import RunDriver, RunOutcome, cancel_on_signals
from kltui.session.events import (
    Event,
    HelperFinished,
    HelperStarted,
    PhaseChanged,
    Problem,
    RunStarted,
    SampleScored,
    SampleSkipped,
    TokensDecoded,
)
from kltui.session.helper_view import HelperView
from kltui.session.store import SessionStore, helper_key
from kltui.untrusted import console_markup, escape_controls, one_line
from kltui.words import compare as compare_words
from kltui.words.batch_sizes import probe_lines
from kltui.words.compare import rerun_line
from kltui.words.cross_server import reading_line, uncompared
from kltui.words.diagnosis import said
from kltui.words.fleet import asides, failure_line, replica_cells, summary_line
from kltui.words.identity import model_line
from kltui.words.stress import lines as stress_lines
from kltui.words.stress import stress_json


class HelperTimeColumn(ProgressColumn):
    """A helper's own duration, from its events' timestamps.

    Rich's TimeElapsedColumn stops a task's clock once completed reaches total, which the
    decoded-sample count does at the first streamed chunk: it printed 0:00:00 for helpers that
    took seconds.
    """

    def __init__(self, store: SessionStore) -> None:
        super().__init__()
        self.store = store

    def render(self, task: Task) -> Text:
        """The helper's elapsed time on the store's clock."""
        st = self.store.helpers.get(task.fields.get("key", ""))
        return Text("" if st is None else fmt.duration(st.elapsed), style="progress.elapsed")


class HeadlessView:
    """`kltui check`'s console view: progress while the run goes, tables after."""

    def __init__(self, store: SessionStore, console: Console, explain: bool = False) -> None:
        self.store, self.console = store, console
        self.explain = explain  # --explain: the diagnosis's statistics' lines too
        self.errors = error_console(console)  # a fatal problem: stderr; the verdict: stdout
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            HelperTimeColumn(store),
            console=console,
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}
        self.flushes: dict[str, int] = {}  # server -> flushes asked (they hit every client)

    def __call__(self, ev: Event) -> None:
        match ev:
            case RunStarted():
                ps = ev.prompt_set
                for s in map(ServerIdentity.of, ev.servers):
                    if not s.error:  # a failed connect is reported by its Problem
                        self.console.print(server_line(s), emoji=False)
                if ps:
                    self.console.print(
                        f"prompt set [bold]{console_markup(str(ps['source']))}[/]: {ps['n']} prompts, "
                        f"{ps['tokens']} tokens, sha256 {ps['sha256']}"
                    )
                self.progress.start()
            case HelperStarted():
                key = helper_key(ev.helper, ev.server)
                label = ev.helper
                if isinstance(ev.settings, dict) and ev.settings.get("reference"):
                    # hf_reference runs once per engine: say which one this bar is
                    label += f" {one_line(ev.settings.get('engine'), 8)}"
                self.tasks[key] = self.progress.add_task(
                    f"{label:<18}", total=ev.n_samples, status="starting", key=key
                )
            case PhaseChanged() | TokensDecoded() | SampleScored() | SampleSkipped():
                if isinstance(ev, PhaseChanged) and ev.phase == "flush":
                    self.flushes[ev.server] = self.flushes.get(ev.server, 0) + 1
                self._update(ev.helper, ev.server)
            case HelperFinished():
                summary = Summary.of(ev.summary)
                self._update(
                    ev.helper,
                    ev.server,
                    final=f"{summary.status} avg_kl_div={fmt.sci(summary.avg_kl_div)}",
                )
            case Problem():
                style = "red" if ev.fatal else "yellow"
                label = "error" if ev.fatal else "warning"
                (self.errors if ev.fatal else self.console).print(
                    f"[{style}]{label}:[/] {console_markup(ev.source)}: {console_markup(ev.message)}",
                    soft_wrap=True,  # one line per problem, also in CI logs
                    emoji=False,  # server text: ":warning:" is not a glyph
                )

    def _update(self, helper: str, server: str, final: str | None = None) -> None:
        st = self.store.helpers.get(helper_key(helper, server))
        task = self.tasks.get(helper_key(helper, server))
        if st is None or task is None:
            return
        done = st.n_scored + len(st.skipped)
        if st.phase == "decode" and done == 0:
            done = sum(1 for n in st.decoded_len.values() if n)
        status = final or (f"{st.phase} · scored {st.n_scored} · skipped {len(st.skipped)}")
        self.progress.update(task, completed=done, status=status)

    def finish(self, report: bool = True) -> None:
        """Ends the progress display; then the results (`report`), or the verdict alone for a
        run of --repeat whose results are printed once, after the last run."""
        self.progress.stop()
        for server, n in self.flushes.items():
            # /flush_cache empties the radix cache for every client of that server: say so
            self.console.print(
                Text(
                    f"flushed the radix cache of {server} {n} time(s) (/flush_cache; it affects "
                    "every client of that server)"
                ),
                soft_wrap=True,
            )
        if report:
            self.report()
        else:
            self.console.print("run " + verdict_line(self.store), soft_wrap=True)

    def report(self) -> None:
        """The results table, the diagnosis, the servers compared and the verdict."""
        if self.store.helpers:
            self.console.print(results_table(self.store))
        for st in self.store.helpers.values():
            # an engine-vs-engine helper of the registry (an import's trainer_vs_rollout is not)
            known = registered(st.helper) is not None
            if known and not same_engine(st.helper) and st.summary and not is_reference(st):
                figures = HelperView.of(st).figures
                print_cross(self.console, figures)
        print_reference(self.console, self.store)
        print_multiturn(self.console, self.store)
        diags = diagnose(self.store)
        for d in diags:
            if d.condition is None and not d.evidence:
                continue
            words = said(d, explain=self.explain)
            head = f"diagnosis {d.server}: " if len(diags) > 1 else "diagnosis: "
            self.console.print(Text.assemble((head, "bold"), words.label), soft_wrap=True)
            for line in words.evidence:
                self.console.print(Text("  · " + line), soft_wrap=True)
            for line in words.suspects:
                self.console.print(Text("  suspect: " + line), soft_wrap=True)
            if words.next_step:
                self.console.print(
                    Text.assemble(("  next: ", "bold"), words.next_step), soft_wrap=True
                )
        fl = fleet(self.store)
        if fl is not None:  # every replica against every other replaces the pairs with the first
            for text in fleet_lines(fl):
                self.console.print(text, soft_wrap=True)
        else:
            for pair in cross_server(self.store):
                for text in pair_lines(pair, self.store):
                    self.console.print(text, soft_wrap=True)
        self.console.print(verdict_line(self.store), soft_wrap=True)


def verdict_line(store: SessionStore) -> str:
    """The verdict line, in Rich markup."""
    fin = store.finished
    verdict = fin.verdict if fin else "interrupted"
    style = {"pass": "bold green", "fail": "bold red"}.get(verdict, "bold yellow")
    line = f"verdict: [{style}]{verdict}[/]"
    fl = fleet(store)
    if (
        fl is not None and (failure := failure_line(fl)) is not None
    ):  # --fleet-require identical said why
        line += console_markup(f" (fleet must be identical: {failure})")
    return line


def pair_lines(pair: ServerPair, store: SessionStore | None = None) -> list[Text]:
    """A cross-server comparison: the reading, whether both load the same weights (verified,
    different or unverified), each helper compared, each one left out and why."""
    x, y = pair.servers
    out = [Text.assemble(("servers compared: ", "bold"), f"A {x} vs B {y}: {reading_line(pair)}")]
    ix, iy = (store.identity(x), store.identity(y)) if store is not None else (None, None)
    if ix and iy:
        out.append(Text(f"  · model: {model_line(model_check(ix, iy))}"))
    for h, c in pair.helpers.items():
        if c.identical is not None:
            same = f"{c.diff.identical_samples}/{c.diff.comparable} samples identical"
            out.append(Text(f"  · {h}: {same}, {compare_words.first_difference(c.diff)}"))
    for h, why in uncompared(pair).items():
        out.append(Text(f"  · {h}: not compared: {why}"))
    return out


def fleet_lines(f: Fleet) -> list[Text]:
    """A fleet run: the router's workers, the comparison's summary, each replica's verdicts."""
    workers = f.workers
    tested = [w for w in workers if w.get("tested")]
    out = [
        Text.assemble(
            ("fleet: ", "bold"),
            f"router {f.router}: {len(workers)} worker(s), {len(tested)} checked directly",
        )
    ]
    for w in workers:
        health = {True: "healthy", False: "unhealthy"}.get(w.get("is_healthy"), "health unknown")
        line = f"  · {w['url']} {w.get('worker_type')} ({health})"
        if not w.get("tested"):
            line += f": not checked: {w.get('note')}"
        out.append(Text(line))
    out.append(Text.assemble(("fleet comparison: ", "bold"), summary_line(f)))
    group = f.group_of()
    for url, row in replica_cells(f).items():
        cells = ", ".join(f"{h} {v}" for h, v in row.items())
        where = f"group {group[url] + 1}" if url in group else "not compared"
        if url not in group and url in f.not_fully_compared:
            where = "not fully compared"
        out.append(Text(f"  · {url} ({where}): {cells}"))
    for url, why in asides(f.uncompared).items():
        out.append(Text(f"  · {url}: not compared: {why}"))
    for url, why in asides(f.not_fully_compared).items():
        out.append(Text(f"  · {url}: not fully compared: {why}"))
    return out


class ConsoleRuns:
    """The console as a view of the run driver (`run/driver.RunView`): each run's progress and
    verdict as it goes (the whole report when there is one run), the recording's path after it."""

    def __init__(
        self, console: Console, repeat: int = 1, stress: str | None = None, explain: bool = False
    ) -> None:
        self.console, self.repeat, self.stress = console, repeat, stress
        self.explain = explain
        self.view: HeadlessView | None = None

    def start_run(self, run_no: int) -> SessionStore:
        """A fresh store, and its progress display."""
        if self.stress:
            # --stress: runs alternate quiet, stressed (run/driver.RunDriver.stress_next)
            what = "quiet" if run_no % 2 else f"under --stress {self.stress}"
            self.console.print(f"[bold]run {run_no}: {what}[/]")
        elif self.repeat > 1:
            self.console.print(f"[bold]run {run_no}/{self.repeat}[/]")
        store = SessionStore()
        self.view = HeadlessView(store, self.console, self.explain)
        return store

    def event(self, ev: Event) -> None:
        """One event of the run, shown by its progress display."""
        if self.view is not None:
            self.view(ev)

    def run_ended(self, outcome: RunOutcome) -> None:
        """The progress display ends: the report (one run) or the verdict (--repeat)."""
        if self.view is not None:
            self.view.finish(self.repeat == 1)
        if outcome.recording is not None:
            self.console.print(f"recording: {console_markup(outcome.recording)}")
        for line in probe_lines(outcome.store):
            self.console.print(Text("batch sizes: " + escape_controls(line)), soft_wrap=True)
        if outcome.stress is not None:
            print_stress(self.console, outcome.stress)

    def retrying(self, seconds: int | None, attempt: int) -> None:
        """`kltui check` does not retry a server that is down: it reports it (exit 3)."""


async def run_check(
    cfg: RunConfig,
    *,
    json_path: str | None = None,
    record_path: str | None = None,
    console: Console | None = None,
    extra_outputs=None,
    repeat: int = 1,
) -> int:
    """`kltui check`: one run, or `repeat` runs each compared bit for bit with the one before
    (the same comparison as the TUI history). The console and the reports describe the last
    run, then each re-run's comparison; the JSON adds "repeat" with every run's verdict and
    equality. `extra_outputs(store, reruns)` writes the other reports."""
    console = console or make_console()
    view = ConsoleRuns(console, repeat, cfg.stress, cfg.explain)
    driver = RunDriver(cfg, record=record_path)
    try:
        with cancel_on_signals():
            await driver.session(view, repeat)
    finally:  # also when a fault ends the session: what ran is reported, then the fault
        if driver.outcome.runs:
            _after_runs(driver.outcome.runs, console, json_path, extra_outputs, repeat, cfg.explain)
    return driver.outcome.exit_code


def _after_runs(
    runs: list[RunOutcome],
    console: Console,
    json_path: str | None,
    extra_outputs,
    repeat: int,
    explain: bool = False,
) -> None:
    """What `kltui check` writes once its runs are over: with --repeat the last run's table and
    each re-run's comparison; then --json and the other reports."""
    store = runs[-1].store
    equality = [r.equality for r in runs if r.equality is not None]
    reruns = tuple((rerun_line(eq, eq.run), eq.identical) for eq in equality)
    if repeat > 1:
        HeadlessView(store, console, explain).report()
        for line, identical in reruns:
            style = "dim" if identical is None else "green" if identical else "yellow"
            head, _, tail = line.partition(": ")
            console.print(Text.assemble((head + ": ", "bold"), (tail, style)), soft_wrap=True)
    if json_path:
        extra: dict | None = None
        if repeat > 1:
            extra = {"repeat": repeat_json([r.store for r in runs], equality, repeat)}
        readings = [r.stress for r in runs if r.stress is not None]
        if readings:
            extra = (extra or {}) | {"stress": stress_json(readings[-1])}
        write_json(store, json_path, extra)
    if extra_outputs:
        extra_outputs(store, reruns)


def print_stress(console: Console, reading: StressReading) -> None:
    """The quiet-vs-stressed reading: its verdict, each helper, the traffic (all escaped: a
    helper name or URL comes from a recording or a server)."""
    style = {"state bug under load": "bold red", "clean": "green"}.get(reading.verdict, "yellow")
    head, *rest = stress_lines(reading)
    console.print(Text(escape_controls(head), style=style), soft_wrap=True)
    for line in rest:
        console.print(Text("  · " + escape_controls(line)), soft_wrap=True)


def repeat_json(stores: list[SessionStore], equality: list[RerunEquality], requested: int) -> dict:
    """The `repeat` section of the JSON result: each run's verdict and its equality with the one before."""
    return {
        "requested": requested,
        "runs": [
            {
                "run": i,
                "run_id": s.run.run_id if s.run else None,
                "verdict": s.finished.verdict if s.finished else "interrupted",
                "avg_kl_div": {
                    k: st.summary.avg_kl_div if st.summary else None for k, st in s.helpers.items()
                },
            }
            for i, s in enumerate(stores, 1)
        ],
        "equality": [e.to_json(compare_words.rerun_reason(e)) for e in equality],
        "all_identical": None
        if not equality or any(e.identical is None for e in equality)
        else all(e.identical for e in equality),
    }
