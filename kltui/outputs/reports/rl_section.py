"""The RL section of a report of an imported file (`kltui import`): verl's and slime's
metrics, the gates and the records that could not be used, as Markdown and HTML. Read from the
import helper's summary; empty for any other run."""

from __future__ import annotations

from kltui.fmt import sci
from kltui.session.store import SessionStore
from kltui.untrusted import html_text, md_text
from kltui.words.rl import differing_line, reading_words


def rl_figures(store: SessionStore) -> dict:
    """The `rl` object of the run's import helper ({} for a run that is not an import)."""
    for st in store.helpers.values():
        raw = st.summary.raw if st.summary is not None else {}
        if isinstance(raw.get("rl"), dict):
            return raw["rl"]
    return {}


def _tables(rl: dict) -> list[tuple[str, list[tuple[str, str]]]]:
    out = []
    for title, key in (("verl 0.9.1 rollout_corr/*", "verl"), ("slime v0.3.1 mismatch", "slime")):
        values = rl.get(key)
        if isinstance(values, dict) and values:
            rows = [
                (str(k), sci(v) if isinstance(v, int | float) else str(v))
                for k, v in values.items()
            ]
            out.append((title, rows))
    return out


def rl_markdown(store: SessionStore) -> list[str]:
    """The section's Markdown lines."""
    rl = rl_figures(store)
    if not rl:
        return []
    src = rl.get("source") or {}
    lines = [
        "",
        f"#### Imported file {md_text(src.get('path'))} ({md_text(src.get('adapter'))}, checked "
        f"against {md_text(src.get('checked_against'))}): {rl.get('usable')} of "
        f"{rl.get('records')} records usable, {rl.get('shown')} shown",
    ]
    for title, rows in _tables(rl):
        lines += ["", f"| {md_text(title)} | value |", "|---|--:|"]
        lines += [f"| {md_text(k)} | {v} |" for k, v in rows]
    lines.append("")
    for g in rl.get("gates") or []:
        mark = "✅" if g.get("passed") else "❌"
        lines.append(f"- gate {md_text(g.get('gate'))}: {sci(g.get('value'))} {mark}")
    for line in reading_words(rl.get("reading")).get("evidence") or []:
        lines.append(f"- {md_text(line)}")
    if differing := differing_line(rl.get("differing_samples") or {}):
        lines.append(f"- {md_text(differing)}")
    bad = rl.get("bad") or []
    for line in bad[:20]:
        lines.append(f"- bad record: {md_text(line)}")
    if rl.get("bad_records", 0) > 20:
        lines.append(f"- … {rl['bad_records'] - 20} more bad records (in the JSON)")
    return lines


def rl_html(store: SessionStore) -> str:
    """The section as HTML (every string escaped)."""
    rl = rl_figures(store)
    if not rl:
        return ""
    src = rl.get("source") or {}
    parts = [
        "<section><h2>Imported file</h2>",
        f"<p>{html_text(src.get('path'))} ({html_text(src.get('adapter'))}, checked against "
        f"{html_text(src.get('checked_against'))}): {rl.get('usable')} of {rl.get('records')} "
        f"records usable, {rl.get('shown')} shown in the heatmaps.</p>",
    ]
    for title, rows in _tables(rl):
        body = "".join(f"<tr><td>{html_text(k)}</td><td>{html_text(v)}</td></tr>" for k, v in rows)
        parts.append(f"<table><caption>{html_text(title)}</caption>{body}</table>")
    gates = "".join(
        f"<li>gate {html_text(g.get('gate'))}: {html_text(sci(g.get('value')))} "
        f"{'PASS' if g.get('passed') else 'FAIL'}</li>"
        for g in rl.get("gates") or []
    )
    bad = "".join(f"<li>{html_text(line)}</li>" for line in (rl.get("bad") or [])[:100])
    parts.append(f"<ul>{gates}{bad}</ul></section>")
    return "".join(parts)
