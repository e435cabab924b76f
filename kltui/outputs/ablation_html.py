"""`kltui ablate --html OUT` and `kltui report FOLDER --html OUT`: the sweep as one
self-contained HTML page, built like the run report (outputs/reports/html.py): the same CSS, the
same Content-Security-Policy (no script, nothing loaded from outside), every string that came
from a server, a log or a recording through `esc` (`untrusted.html_text`).

The page: the verdict, the table of configurations x helpers (the console's rows), the traps,
notes and next step, each failed configuration with its server log's last lines, the chain to the module (`--chain`)
when one ran, and the time split."""

from __future__ import annotations

from kltui import __version__
from kltui.ablate.sweep import MEASURED, ConfigRun, Sweep
from kltui.launch.server import read_tail
from kltui.outputs.ablation_rows import (
    chain_lines,
    helper_names,
    pairs_line,
    rows,
    stress_lines,
    tail_lines,
)
from kltui.outputs.reports.html import page_head
from kltui.readings.ablation import Ablation
from kltui.readings.ablation_outcome import SweepOutcome
from kltui.untrusted import html_text as esc
from kltui.words.ablation import verdict_line
from kltui.words.ablation_legend import legend
from kltui.words.ablation_sweep import run_line
from kltui.words.ablation_timing import timing_line

LOG_TAIL_LINES = 8  # of a failed configuration's server log

# the header's colour: a divergence found is a fail, none a pass, an open question neither
_HEAD_CLASS = {"not reproduced": "pass", "inconclusive": "unknown"}


def _header(sweep: Sweep, ab: Ablation) -> str:
    kind = ab.verdict.kind if sweep.base.status == MEASURED else "the base did not start"
    cls = _HEAD_CLASS.get(kind, "fail" if sweep.base.status == MEASURED else "invalid")
    measured = sum(1 for r in sweep.runs if r.status == MEASURED)
    meta = [
        f"sweep folder <code>{esc(sweep.folder)}</code>",
        f"{esc(sweep.mode)} mode",
        f"{measured}/{len(sweep.runs)} configurations measured",
    ]
    if sweep.launch:
        meta.append(f"base <code>{esc(' '.join(sweep.launch))}</code>")
    return f"""<header class="top {cls}">
<div class="brand">kltui<span>ablation report</span></div>
<div class="verdict"><span class="verdict-label">verdict</span>
<span class="verdict-value">{esc(kind)}</span>
<span class="tally">{esc(verdict_line(ab) if sweep.base.status == MEASURED else run_line(sweep.base))}</span>
</div>
<p class="meta">{" · ".join(meta)}</p>
</header>"""


def _banners(sweep: Sweep) -> str:
    out = []
    if sweep.interrupted:
        out.append("The sweep was interrupted: the configurations below were measured.")
    if sweep.base.status != MEASURED:
        out.append(f"The base did not start, nothing to compare with: {run_line(sweep.base)}")
    return "".join(f'<div class="banner">{esc(t)}</div>' for t in out)


def _table(sweep: Sweep, ab: Ablation) -> str:
    names = helper_names(ab)
    head = "".join(f'<th class="n">{esc(h)}</th>' for h in names)
    body = []
    for name, cells, cond, what in rows(sweep, ab):
        tds = "".join(f'<td class="n">{esc(c)}</td>' for c in cells)
        cls = ' class="differs"' if what else ""
        body.append(
            f'<tr{cls}><td>{esc(name)}</td>{tds}<td class="n">{esc(cond)}</td>'
            f"<td>{esc(what)}</td></tr>"
        )
    return f"""<section><h2>Configurations x helpers</h2>
<p class="lede">avg_kl_div of each helper, and its change against the base (the paired
per-sample test decides removed, reduced, lower, none; bit-identical samples are counted).</p>
<table class="results"><thead><tr><th>configuration</th>{head}<th class="n">condition</th>
<th>note</th></tr></thead><tbody>{"".join(body)}</tbody></table>{_legend(ab)}</section>"""


def _legend(ab: Ablation) -> str:
    items = "".join(f"<li>{esc(line)}</li>" for line in legend(ab))
    return f'<ul class="legend muted">{items}</ul>' if items else ""


def _reading(sweep: Sweep, ab: Ablation) -> str:
    said = verdict_line(ab)
    lines = [ln for ln in tail_lines(ab) if ln != said]
    if (why := pairs_line(sweep)) is not None:
        lines.append(why)
    lines += stress_lines(sweep)
    items = "".join(f"<li>{esc(ln)}</li>" for ln in lines)
    return f"""<section><h2>Verdict</h2><div class="diag"><p><strong>{esc(said)}</strong></p>
{f"<ul>{items}</ul>" if items else ""}</div></section>"""


def log_tail(sweep: Sweep, run: ConfigRun, n: int) -> list[str]:
    """The last lines of a configuration's server log (raw server text)."""
    return [] if run.config.server else read_tail(sweep.folder / run.log, n)


def _failures(sweep: Sweep) -> str:
    failed = sweep.failures()
    if not failed:
        return ""
    items = []
    for r in failed:
        tail = log_tail(sweep, r, LOG_TAIL_LINES)
        log = (
            f"<details><summary>the last {len(tail)} lines of <code>{esc(r.log)}</code>"
            f"</summary><pre>{esc(chr(10).join(tail))}</pre></details>"
            if tail
            else ""
        )
        items.append(
            f'<li class="err"><span class="kind">failed</span><code>{esc(r.name)}</code> '
            f'<span class="muted">[{esc(r.error_kind)}]</span> {esc(r.error)}{log}</li>'
        )
    return (
        "<section><h2>Failed configurations</h2>"
        f"<ul class='problems'>{''.join(items)}</ul></section>"
    )


def _chain(sweep: Sweep) -> str:
    lines = chain_lines(sweep)
    if not lines:
        return ""
    items = "".join(f"<li>{esc(ln)}</li>" for ln in lines)
    return f"""<section><h2>From the setting to the module and the op</h2>
<div class="diag cond-1"><ul>{items}</ul></div></section>"""


def html_report(sweep: Sweep, result: SweepOutcome) -> str:
    """The self-contained HTML page of a sweep."""
    ab = result.ablation
    title = f"kltui ablate · {ab.verdict.kind} · {sweep.folder.name}"
    return f"""{page_head(title)}
{_header(sweep, ab)}{_banners(sweep)}
{_table(sweep, ab) if sweep.base.status == MEASURED else ""}{_reading(sweep, ab)}
{_failures(sweep)}{_chain(sweep)}
<section><p class="meta">{esc(timing_line(sweep, result.timing))}</p></section>
<footer>Generated by kltui {esc(__version__)}. Each configuration is the base with the knobs
in its name changed; every helper ran on the same prompts and sample ids.</footer>
</main></body></html>
"""
