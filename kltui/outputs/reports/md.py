"""The Markdown report: a verdict, one results table and a few lines, sized for a pull request.

Text from servers and recordings is untrusted: `md_escape` keeps it from splitting table cells,
opening links or HTML, pinging people (@name) or starting math, so it renders literally.
"""

from __future__ import annotations

import re

from kltui import __version__, fmt
from kltui.engines.geometry import geometry_of
from kltui.outputs.hf_judge_rows import is_reference
from kltui.outputs.reports.common import (
    Origin,
    config_table,
    cross_rows,
    helper_names,
    helper_status,
    max_location,
    prompt_summary,
    reference_ran,
    run_time,
    timestamp,
    verdict,
)
from kltui.outputs.reports.hf_judge_section import reference_markdown
from kltui.outputs.reports.multiturn_section import multiturn_markdown
from kltui.outputs.reports.rl_section import rl_markdown
from kltui.readings.cross_server import cross_server
from kltui.readings.diagnosis import diagnose
from kltui.readings.fleet import fleet
from kltui.readings.fleet_model import Fleet
from kltui.session.helper_view import HelperView
from kltui.session.store import SessionStore
from kltui.untrusted import md_text
from kltui.words.compare import first_difference
from kltui.words.cross_server import reading_line, uncompared
from kltui.words.diagnosis import said
from kltui.words.fleet import failure_line, replica_cells, summary_line
from kltui.words.geometry import geometry_line
from kltui.words.report_headline import Partial, headline, md_quote
from kltui.words.report_notes import did_not_finish, more_problems
from kltui.words.server_facts import server_summary

MAX_PROBLEMS = 8
_HEX = re.compile(r"[0-9a-fA-F]{1,128}")

ICON = {
    "pass": "✅ pass",
    "fail": "❌ fail",
    "error": "⛔ error",
    "invalid": "⛔ invalid",
    "vacuous": "⚪ vacuous",
    "incomplete": "⏸ incomplete",
    "interrupted": "⏸ interrupted",
}


def config_md(rows: list[dict]) -> list[str]:
    """The engine settings table under cross_engine's line (values came from servers)."""
    if not rows:
        return []

    def cell(v) -> str:
        return "–" if v is None else md_text(v)

    out = ["", "  | setting | SGLang | vLLM | status | read from |", "  |---|---|---|---|---|"]
    for r in rows:
        out.append(
            f"  | {cell(r.get('label'))} | {cell(r.get('sglang'))} | {cell(r.get('vllm'))} "
            f"| {cell(r.get('status'))} | {cell(r.get('source') or '')} |"
        )
    return out + [""]


def _code(text: object) -> str:
    """Hex digests go in code spans; anything else is escaped text."""
    s = str(text)
    return f"`{s}`" if _HEX.fullmatch(s) else md_text(s)


def results_table(store: SessionStore) -> list[str]:
    """The Markdown results table, one row per helper and server."""
    names = helper_names(store)
    lines = [
        "| helper | result | avg_kl_div | threshold | tokens > τ | max k3 (sample@pos) "
        "| first divergence | scored / skipped |",
        "|---|---|--:|--:|--:|--:|---|--:|",
    ]
    for key, st in store.helpers.items():
        v = HelperView.of(st)
        s = v.summary
        at = max_location(s)
        where = f" ({at['sample']}@{at['position']})" if at else ""
        first = s.first_divergence
        status = v.result
        cells = [
            md_text(names[key]),
            ICON.get(status, md_text(status)),
            f"**{fmt.sci(s.avg_kl_div)}**",
            fmt.sci(v.threshold),
            f"{fmt.pct(s.tail_fraction)} ({(s.n_tail or 0)})",
            md_text(f"{fmt.sci(s.max_k3)}{where}"),
            md_text(f"{first['sample']}@{first['position']}" if first else "none"),
            md_text(f"{v.scored}/{v.samples} / {v.skipped}"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def notes(store: SessionStore) -> list[str]:
    """One line per helper fact that changes how its number reads (error, vacuous, hits)."""
    names = helper_names(store)
    out = []
    for key, st in store.helpers.items():
        v = HelperView.of(st)
        for note in (v.summary.error, v.summary.hit_failure, v.summary.reason):
            if note:
                out.append(f"- {md_text(names[key])}: {md_text(note)}")
        if not v.finished:
            out.append(f"- {md_text(names[key])}: {md_text(did_not_finish(st.phase))}")
    return out


def gate_text(f: Fleet) -> str:
    """`--fleet-require identical`'s outcome in Markdown: passed, or failed and why."""
    failure = failure_line(f)
    return "passed" if failure is None else f"**failed**: {md_text(failure)}"


def fleet_md(f: Fleet) -> list[str]:
    """A fleet run: the comparison's summary, the groups and a replica x helper table."""
    workers = f.workers
    lines = [
        f"- **Fleet** router {md_text(f.router)}: {len(workers)} worker(s), "
        f"{sum(1 for w in workers if w.get('tested'))} checked directly: {md_text(summary_line(f))}"
    ]
    if f.require == "identical":
        lines.append(f"- **Fleet must be identical** (`--fleet-require identical`): {gate_text(f)}")
    for w in workers:
        if not w.get("tested"):
            lines.append(
                f"  - {md_text(w['url'])} ({md_text(w.get('worker_type'))}) not checked: "
                f"{md_text(w.get('note'))}"
            )
    cells = replica_cells(f)
    if not cells:
        return lines
    group = f.group_of()
    helpers = list(f.matrices)
    lines += [
        "",
        "| replica | group | " + " | ".join(md_text(h) for h in helpers) + " |",
        "|---|---|" + "---|" * len(helpers),
    ]
    for url, row in cells.items():
        g = str(group[url] + 1) if url in group else "–"
        lines.append(
            f"| {md_text(url)} | {g} | " + " | ".join(md_text(row[h]) for h in helpers) + " |"
        )
    return lines + [""]


def _compared_md(store: SessionStore) -> list[str]:
    """Each pair of servers compared: the reading, where they first differ, what was not
    compared and why."""
    lines = []
    for pair in cross_server(store):
        x, y = pair.servers
        where = "; ".join(
            f"{md_text(h)} {md_text(first_difference(c.diff))}"
            for h, c in pair.helpers.items()
            if c.identical is not None
        )
        lines.append(
            f"- **Servers compared** A {md_text(x)} vs B {md_text(y)}: "
            f"{md_text(reading_line(pair))}" + (f" ({where})" if where else "")
        )
        for h, why in uncompared(pair).items():
            lines.append(f"  - {md_text(h)} not compared: {md_text(why)}")
    return lines


def _servers_md(store: SessionStore) -> list[str]:
    """Each server as it identified itself (and its state geometry), then the prompts."""
    lines = []
    for s in store.identities():
        ran = reference_ran(store) if s.get("engine") == "hf" else None
        state = geometry_line(geometry_of(s))
        lines.append(
            f"- **Server** {md_text(server_summary(s, ran))}"
            + (f"; state: {md_text(state)}" if state else "")
        )
    run = store.run
    if run is not None and run.prompt_set:
        ps = run.prompt_set
        lines.append(
            f"- **Prompts** {md_text(prompt_summary(ps))}; sha256 {_code(ps.get('sha256', '?'))}"
        )
    return lines


def _problems_md(store: SessionStore) -> list[str]:
    """The run's problems, errors first, at most MAX_PROBLEMS of them."""
    errors = [p for p in store.problems if p.fatal]
    warnings = [p for p in store.problems if not p.fatal]
    listed = (errors + warnings)[:MAX_PROBLEMS]
    lines = []
    for prob in listed:
        kind = "Error" if prob.fatal else "Warning"
        lines.append(f"- **{kind}** {md_text(prob.source)}: {md_text(prob.message)}")
    if len(store.problems) > len(listed):
        lines.append(f"- {more_problems(len(store.problems) - len(listed))}")
    return lines


def md_report(store: SessionStore, origin: Origin | None = None) -> str:
    """The Markdown report of a run, sized for a pull request."""
    run = store.run
    v = verdict(store)
    helpers = list(store.helpers.values())
    passed = sum(1 for st in helpers if helper_status(st) == "pass")
    lines = [f"### {headline(ICON.get(v, md_text(v)), passed, len(helpers))}", ""]
    if origin is not None and origin.truncated:
        lines += [f"> {md_quote(Partial.CUT_SHORT)}", ""]
    if run is None:
        lines += [f"> {md_quote(Partial.NO_RUN)}", ""]
    if helpers:
        lines += results_table(store) + [""]
    lines += notes(store)
    for line, _ in origin.reruns if origin is not None else ():
        lines.append(f"- **Repeat** {md_text(line)}")
    for key, st in store.helpers.items():
        rows = [] if is_reference(st) else cross_rows(st.summary)
        if rows:
            name = md_text(helper_names(store)[key])
            shown = "; ".join(f"{md_text(label)} {md_text(value)}" for label, value in rows)
            lines.append(f"- **{name}** {shown}")
            lines += config_md(config_table(st.summary))
    lines += reference_markdown(store)
    lines += multiturn_markdown(store)
    for d in diagnose(store):
        text = said(d)
        lines.append(f"- **Diagnosis** {md_text(d.server)}: {md_text(text.label)}")
        if text.next_step:
            lines.append(f"  - next: {md_text(text.next_step)}")
    fl = fleet(store)
    lines += fleet_md(fl) if fl is not None else []
    if fl is None:
        lines += _compared_md(store)
    lines += _servers_md(store)
    lines += _problems_md(store)
    lines += rl_markdown(store)
    run_id = f"run {md_text(run.run_id)} · " if run else ""
    lines += ["", f"<sub>{run_id}{timestamp(run_time(store, origin))} · kltui {__version__}</sub>"]
    return "\n".join(lines) + "\n"
