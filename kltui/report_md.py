"""The Markdown report: a verdict, one results table and a few lines, sized for a pull request.

Text from servers and recordings is untrusted: `md_escape` keeps it from splitting table cells,
opening links or HTML, pinging people (@name) or starting math, so it renders literally.
"""

from __future__ import annotations

import re

from kltui import __version__, fmt
from kltui.compare import cross_server, describe_first_dict
from kltui.diagnosis import diagnose
from kltui.report import (
    Origin,
    cross_rows,
    helper_names,
    helper_status,
    max_location,
    prompt_summary,
    run_time,
    server_summary,
    timestamp,
    verdict,
)
from kltui.session import SessionStore

MAX_PROBLEMS = 8
# Characters that are active mid-line in GitHub Markdown; line-start markers (-, +, 1.) never
# apply because untrusted text never starts a line here.
_ACTIVE = re.compile(r"([\\`*_{}\[\]<>#|~@$&])")
_SPACE = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
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


def md_escape(text: object) -> str:
    """One line of literal text: control characters become spaces, and every character that
    is active somewhere in GitHub Markdown (tables, links, HTML, mentions, math) is escaped."""
    return _ACTIVE.sub(r"\\\1", _SPACE.sub(" ", str(text)))


def _code(text: object) -> str:
    """Hex digests go in code spans; anything else is escaped text."""
    s = str(text)
    return f"`{s}`" if _HEX.fullmatch(s) else md_escape(s)


def results_table(store: SessionStore) -> list[str]:
    names = helper_names(store)
    lines = [
        "| helper | result | avg_kl_div | threshold | tokens > τ | max k3 (sample@pos) "
        "| first divergence | scored / skipped |",
        "|---|---|--:|--:|--:|--:|---|--:|",
    ]
    for key, st in store.helpers.items():
        s = st.summary or {}
        at = max_location(s)
        where = f" ({at['sample']}@{at['position']})" if at else ""
        first = s.get("first_divergence")
        status = helper_status(st)
        cells = [
            md_escape(names[key]),
            ICON.get(status, md_escape(status)),
            f"**{fmt.sci(s.get('avg_kl_div'))}**",
            fmt.sci(s.get("threshold", st.threshold)),
            f"{fmt.pct(s.get('tail_fraction'))} ({s.get('n_tail', 0)})",
            md_escape(f"{fmt.sci(s.get('max_k3'))}{where}"),
            md_escape(f"{first['sample']}@{first['position']}" if first else "none"),
            md_escape(
                f"{s.get('scored', st.n_scored)}/{s.get('samples', st.n_samples)} / "
                f"{s.get('skipped', len(st.skipped))}"
            ),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def notes(store: SessionStore) -> list[str]:
    """One line per helper fact that changes how its number reads (error, vacuous, hits)."""
    names = helper_names(store)
    out = []
    for key, st in store.helpers.items():
        s = st.summary or {}
        for field in ("error", "hit_failure", "reason"):
            if s.get(field):
                out.append(f"- {md_escape(names[key])}: {md_escape(s[field])}")
        if st.summary is None:
            out.append(
                f"- {md_escape(names[key])}: did not finish (last phase {md_escape(st.phase)})"
            )
    return out


def md_report(store: SessionStore, origin: Origin | None = None) -> str:
    run = store.run
    v = verdict(store)
    helpers = list(store.helpers.values())
    passed = sum(1 for st in helpers if helper_status(st) == "pass")
    head = (
        f"### kltui alignment: {ICON.get(v, md_escape(v))} — {passed}/{len(helpers)} helpers pass"
    )
    lines = [head, ""]
    if origin is not None and origin.truncated:
        lines += ["> ⚠️ The recording was cut short; results are partial.", ""]
    if run is None:
        lines += ["> The recording holds no run (it ended before the servers were identified).", ""]
    if helpers:
        lines += results_table(store) + [""]
    lines += notes(store)
    for key, st in store.helpers.items():
        rows = cross_rows(st.summary)
        if rows:
            name = md_escape(helper_names(store)[key])
            shown = "; ".join(f"{md_escape(label)} {md_escape(value)}" for label, value in rows)
            lines.append(f"- **{name}** {shown}")
    for d in diagnose(store):
        lines.append(f"- **Diagnosis** {md_escape(d.server)}: {md_escape(d.label)}")
        if d.next_step:
            lines.append(f"  - next: {md_escape(d.next_step)}")
    for pair in cross_server(store):
        x, y = pair["servers"]
        where = "; ".join(
            f"{md_escape(h)} {md_escape(describe_first_dict(c))}"
            for h, c in pair["helpers"].items()
        )
        lines.append(
            f"- **Servers compared** {md_escape(x)} vs {md_escape(y)}: "
            f"{md_escape(pair['reading'])}" + (f" ({where})" if where else "")
        )
    for s in run.servers if run else []:
        lines.append(f"- **Server** {md_escape(server_summary(s))}")
    if run is not None and run.prompt_set:
        ps = run.prompt_set
        lines.append(
            f"- **Prompts** {md_escape(prompt_summary(ps))}; sha256 {_code(ps.get('sha256', '?'))}"
        )
    errors = [p for p in store.problems if p.fatal]
    warnings = [p for p in store.problems if not p.fatal]
    shown = (errors + warnings)[:MAX_PROBLEMS]
    for p in shown:
        kind = "Error" if p.fatal else "Warning"
        lines.append(f"- **{kind}** {md_escape(p.source)}: {md_escape(p.message)}")
    if len(store.problems) > len(shown):
        lines.append(f"- … and {len(store.problems) - len(shown)} more problems in the recording")
    run_id = f"run {md_escape(run.run_id)} · " if run else ""
    lines += ["", f"<sub>{run_id}{timestamp(run_time(store, origin))} · kltui {__version__}</sub>"]
    return "\n".join(lines) + "\n"
