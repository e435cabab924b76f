"""`kltui ablate`'s outputs: the live console of a sweep (`SweepConsole`, a `run/ablate.SweepView`),
the table of configurations x helpers with the verdict after it, the JSON document (`document`,
schema kltui/schemas/ablation.schema.json, docs/JSON.md) and the Markdown, JUnit and HTML
(`ablation_html.py`) reports.

Every number of the verdict comes from `readings/ablation_outcome.SweepOutcome` (the reading,
the exit code, the time split, computed once), every word of it from words/ablation*.py;
everything a server
wrote (log lines, failure lines, settings) is escaped for the medium it goes to.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

from rich.console import Console
from rich.status import Status
from rich.table import Table
from rich.text import Text

from kltui import __version__
from kltui.ablate.sweep import FAILED, MANIFEST, MEASURED, ConfigRun, Sweep
from kltui.console import make_console
from kltui.outputs.ablation_html import html_report
from kltui.outputs.ablation_rows import (
    chain_lines,
    configs_by_name,
    helper_names,
    pairs_line,
    rows,
    stress_lines,
    tail_lines,
)
from kltui.outputs.headless import HeadlessView
from kltui.readings.ablation import Ablation
from kltui.readings.ablation_outcome import SweepOutcome, outcome
from kltui.readings.ablation_stress import SweepStressKind, read_stress
from kltui.readings.stress import StressReading
from kltui.run.driver import RunOutcome, RunView
from kltui.session import jsonfile
from kltui.session.events import Event
from kltui.session.store import SessionStore
from kltui.untrusted import console_markup, md_text, one_line, safe, xml_text
from kltui.words.ablation import verdict_line
from kltui.words.ablation_config import config_line, missing_text
from kltui.words.ablation_json import ablation_json
from kltui.words.ablation_legend import legend
from kltui.words.ablation_sweep import INTERRUPTED_LINE, pairs_added, run_line, verdict_entry
from kltui.words.ablation_timing import timing_line
from kltui.words.chain import chain_json
from kltui.words.stress import stress_json

PROGRESS_LINE = 100  # characters of the log's last line shown beside the start progress


class _Helpers:
    """One configuration's helper run on the console: `kltui check`'s progress bars, then its
    run verdict (the ablation table comes once, after every configuration)."""

    def __init__(self, console: Console, live: bool) -> None:
        self.console, self.live = console, live
        self.view: HeadlessView | None = None

    def start_run(self, run_no: int) -> SessionStore:
        """A fresh store (and, one configuration at a time, its progress bars)."""
        store = SessionStore()
        self.view = HeadlessView(store, self.console) if self.live else None
        return store

    def event(self, ev: Event) -> None:
        """One event, shown by the progress bars."""
        if self.view is not None:
            self.view(ev)

    def run_ended(self, outcome: RunOutcome) -> None:
        """The progress bars end with the run's own verdict."""
        if self.view is not None:
            self.view.finish(report=False)

    def retrying(self, seconds: int | None, attempt: int) -> None:
        """Never asked: the sweep's runs do not retry connecting."""


class SweepConsole:
    """The console while a sweep runs: a live line while each server starts (configuration
    k/N, seconds, its log's last line), the helpers' progress, one line per configuration's
    end. With several configurations at once, only the lines (progress bars cannot share a
    terminal)."""

    def __init__(self, console: Console, parallel: int = 1) -> None:
        self.console, self.parallel = console, parallel
        self.status: Status | None = None
        self.known: int | None = None

    def planned(self, sweep: Sweep) -> None:
        """The first time, nothing: the command printed the configurations before the sweep
        began. Later (--pairs adds some), one line naming them, so that "config 4/4" after
        "3 configurations" reads as planned, not as a miscount."""
        added = sweep.runs[self.known :] if self.known is not None else ()
        if added:
            line = pairs_added([r.name for r in added])
            self.console.print(console_markup(line), soft_wrap=True)
        self.known = len(sweep.runs)

    def _head(self, k: int, n: int, run: ConfigRun) -> str:
        return f"config {k}/{n} [bold]{console_markup(run.name)}[/]"

    def starting(self, k: int, n: int, run: ConfigRun) -> None:
        """The start of a server: a live line (on a terminal; one plain line elsewhere)."""
        head = f"{self._head(k, n, run)}: starting"
        if self.parallel > 1 or not self.console.is_terminal:
            self.console.print(head, soft_wrap=True)
            return
        self.status = self.console.status(head)
        self.status.start()

    def progress(self, k: int, n: int, run: ConfigRun, seconds: float, line: str) -> None:
        """The live line: seconds so far and the log's last line, escaped."""
        if self.status is not None:
            last = console_markup(one_line(line, PROGRESS_LINE)) if line else "…"
            self.status.update(f"{self._head(k, n, run)}: starting {seconds:4.0f} s · {last}")

    def _stop_status(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def started(self, k: int, n: int, run: ConfigRun) -> None:
        """The server answers: where, after how long."""
        self._stop_status()
        took = f" in {run.start_s:.1f} s" if run.start_s is not None else ""
        what = "up at" if run.start_s is not None else "attached to"
        self.console.print(
            f"{self._head(k, n, run)}: {what} {console_markup(run.url)}{took}", soft_wrap=True
        )

    def run_view(self, k: int, n: int, run: ConfigRun) -> RunView:
        """Its helpers' view: progress bars one configuration at a time, quiet otherwise."""
        return _Helpers(self.console, live=self.parallel == 1)

    def stress_json(self, reading: StressReading) -> dict:
        """The --stress reading as the manifest keeps it."""
        return stress_json(reading)

    def ended(self, k: int, n: int, run: ConfigRun) -> None:
        """Measured (with its run's verdict) or failed (its one line, escaped)."""
        self._stop_status()
        if run.status == FAILED:
            self.console.print(
                f"[red]failed:[/] {console_markup(run.error)}", soft_wrap=True, emoji=False
            )
        elif run.status == MEASURED:
            took = f" in {run.run_s:.1f} s" if run.run_s is not None else ""
            self.console.print(
                f"{self._head(k, n, run)}: measured{took} (run verdict "
                f"{console_markup(run.verdict)})",
                soft_wrap=True,
            )


# --------------------------------------------------------------------------- the result
def table(sweep: Sweep, ab: Ablation) -> Table:
    """The console table of configurations x helpers."""
    t = Table(title="kltui ablate: configurations x helpers (avg_kl_div)", title_justify="left")
    t.add_column("configuration")
    for h in helper_names(ab):
        t.add_column(h, justify="right")
    t.add_column("condition", justify="right")
    t.add_column("note")
    for name, cells, cond, what in rows(sweep, ab):
        style = "yellow" if what else ""
        t.add_row(safe(name), *(safe(c) for c in cells), safe(cond), safe(what, style))
    return t


def print_result(console: Console, sweep: Sweep, out: SweepOutcome) -> None:
    """The table, each failure's line, the verdict with its traps and next step, the time
    split and the sweep folder."""
    ab = out.ablation
    said = verdict_line(ab)
    console.print(table(sweep, ab))
    for line in legend(ab):
        console.print(safe(line, "dim"), soft_wrap=True)
    for r in sweep.failures():
        console.print(Text.assemble(("failed: ", "red"), safe(r.error)), soft_wrap=True)
    for line in tail_lines(ab):
        style = "bold" if line == said else ""
        console.print(safe(line, style), soft_wrap=True)
    if sweep.interrupted:
        console.print(Text(INTERRUPTED_LINE, "yellow"))
    elif (why := pairs_line(sweep)) is not None:
        console.print(Text(why, "yellow"), soft_wrap=True)
    found = read_stress(sweep)
    loud = found is not None and found.kind is not SweepStressKind.NO_BUG  # by kind, not words
    for line in stress_lines(sweep):
        console.print(safe(line, "bold red" if loud else ""), soft_wrap=True)
    for line in chain_lines(sweep):
        console.print(safe(line, "bold" if line.startswith("chain:") else ""), soft_wrap=True)
    console.print(safe(timing_line(sweep, out.timing), "dim"), soft_wrap=True)
    console.print(f"sweep folder: {console_markup(sweep.folder)}", soft_wrap=True)


# --------------------------------------------------------------------------- JSON and reports
def ablate_json(sweep: Sweep, result: SweepOutcome) -> dict:
    """The JSON document `kltui ablate --json` writes (docs/JSON.md, ablation.schema.json)."""
    return {
        "kltui_version": __version__,
        "ablation": ablation_json(result.ablation),
        "sweep": sweep.to_json(),
        "chain": chain_json(sweep.chain),
        "exit_code": result.exit_code,
    }


def write_json(sweep: Sweep, result: SweepOutcome, path: str) -> None:
    """Write the JSON document ("-": stdout)."""
    jsonfile.write_json_document(path, ablate_json(sweep, result), "ablation")


def md_report(sweep: Sweep, result: SweepOutcome) -> str:
    """The Markdown report: the same table, the failures, the verdict, the time split."""
    ab = result.ablation
    said = verdict_line(ab)
    names = helper_names(ab)
    out = [
        "# kltui ablate",
        "",
        f"**{md_text(said)}**",
        "",
        "| configuration | " + " | ".join(md_text(h) for h in names) + " | condition | note |",
        "|---|" + "---:|" * len(names) + "---:|---|",
    ]
    for name, cells, cond, what in rows(sweep, ab):
        row = [md_text(name), *(md_text(c) for c in cells), md_text(cond), md_text(what)]
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    if labels := legend(ab):
        out += [f"<sub>{md_text(line)}</sub><br>" for line in labels] + [""]
    for r in sweep.failures():
        out.append(f"- failed: {md_text(r.error)}")
    for line in tail_lines(ab):
        if line != said:
            out.append(f"- {md_text(line)}")
    if sweep.interrupted:
        out.append(f"- {INTERRUPTED_LINE}")
    out += [f"- {md_text(line)}" for line in stress_lines(sweep)]
    if chain := chain_lines(sweep):
        out += ["", "## From the setting to the module and the op", ""]
        out += [f"- {md_text(line)}" for line in chain]
    out += [
        "",
        md_text(timing_line(sweep, result.timing)),
        "",
        f"Sweep folder: {md_text(sweep.folder)}",
        "",
    ]
    return "\n".join(out)


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: object) -> ET.Element:
    el = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attrs.items()})
    if text:
        el.text = xml_text(text)
    return el


def junit_report(sweep: Sweep, result: SweepOutcome) -> str:
    """JUnit XML: one test case per configuration. A configuration that failed (its server
    did not start or died) is an <error>, one not run or cut short is <skipped>; a measured
    one passes, with its line (trap included) as its output. The verdict is a property."""
    ab = result.ablation
    suite_name = "kltui.ablate"
    root = ET.Element("testsuites", name=suite_name)
    suite = _sub(root, "testsuite", name=suite_name)
    props = _sub(suite, "properties")
    _sub(props, "property", name="verdict", value=ab.verdict.kind)
    _sub(props, "property", name="verdict.line", value=verdict_line(ab))
    _sub(props, "property", name="exit_code", value=result.exit_code)
    _sub(props, "property", name="folder", value=sweep.folder)
    runs = configs_by_name(sweep)
    counts = {"errors": 0, "skipped": 0, "failures": 0}
    total = 0.0
    for c in (ab.base, *ab.configs):
        run = runs.get(c.config.name)
        secs = sum(x or 0.0 for x in (run.start_s, run.run_s)) if run else 0.0
        total += secs
        case = _sub(suite, "testcase", classname=suite_name, name=c.config.name, time=f"{secs:.3f}")
        if run is not None and run.status == FAILED:
            _sub(case, "error", run.error, message=one_line(run.error, 300), type=run.error_kind)
            counts["errors"] += 1
        elif not c.measured:
            why = run.status if run is not None else missing_text(c)
            _sub(case, "skipped", message=f"not measured: {why}")
            counts["skipped"] += 1
        else:
            _sub(case, "system-out", config_line(c))
    attrs = {"tests": len(ab.configs) + 1, **counts, "time": f"{total:.3f}"}
    for el in (root, suite):
        for k, val in attrs.items():
            el.set(k, str(val))
    _sub(suite, "system-out", "\n".join([*tail_lines(ab), timing_line(sweep, result.timing)]))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_reports(
    sweep: Sweep, result: SweepOutcome, *, md=None, junit=None, json=None, html=None
) -> list[str]:
    """Every report asked for; the paths written ("-": stdout)."""
    written = []
    if html:
        jsonfile.write_output(html, html_report(sweep, result))
        written.append(html)
    if json:
        write_json(sweep, result, json)
        written.append(json)
    if md:
        jsonfile.write_output(md, md_report(sweep, result))
        written.append(md)
    if junit:
        jsonfile.write_output(junit, junit_report(sweep, result))
        written.append(junit)
    return written


def finish(
    console: Console, sweep: Sweep, *, live=False, md=None, junit=None, json=None, html=None
) -> int:
    """A sweep that ended (live or read back): its result on the console, its reports
    written; the exit code (`SweepOutcome.exit_code`). A live sweep's manifest gets its
    verdict (kind, line, exit code) here, where its words are."""
    result = outcome(sweep)
    if live:
        sweep.verdict = verdict_entry(result)
        jsonfile.replace_json(sweep.folder / MANIFEST, sweep.manifest())
    if sweep.base.status == MEASURED:
        print_result(console, sweep, result)
    else:
        # nothing to compare with: the base's own line (with its log's last lines) says why
        console.print(
            f"[red]kltui ablate: the base did not start:[/] {console_markup(run_line(sweep.base))}",
            soft_wrap=True,
            emoji=False,
        )
    for path in write_reports(sweep, result, md=md, junit=junit, json=json, html=html):
        if path != "-":
            print(f"kltui ablate: wrote {path}", file=sys.stderr)
    return result.exit_code


def replay_folder(sweep: Sweep, *, md=None, junit=None, json=None, html=None) -> int:
    """`kltui ablate --replay FOLDER` and `kltui report FOLDER`: the sweep read back from its
    recordings and manifest (run/sweep_manifest.load, by the command), shown and written as
    the live sweep was."""
    return finish(make_console(), sweep, md=md, junit=junit, json=json, html=html)
