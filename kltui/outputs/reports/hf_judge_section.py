"""The HF reference in the Markdown and HTML reports: per engine one line against the reference
and its config diff, then the three-way table (SGLang vs HF reference, vLLM vs HF reference,
SGLang vs vLLM, on the same ids) and the verdict. Text from `outputs/hf_judge_rows.py`, every
string escaped for the medium; empty for a run without an hf: reference."""

from __future__ import annotations

from kltui.outputs.hf_judge_rows import (
    DIFF_COLUMNS,
    REFERENCE_LABEL,
    THREE_WAY_COLUMNS,
    diff_rows,
    is_reference,
    reference_line,
    three_way_rows,
    verdict_text,
)
from kltui.readings.three_way import three_way
from kltui.session.helper_view import HelperView
from kltui.session.store import SessionStore
from kltui.untrusted import html_text, md_text


def _engines(store: SessionStore) -> list:
    return [HelperView.of(st).figures for st in store.helpers.values() if is_reference(st)]


def reference_markdown(store: SessionStore) -> list[str]:
    """The section's Markdown lines."""
    engines = _engines(store)
    if not engines:
        return []
    lines = ["", f"#### Against the {REFERENCE_LABEL} (Hugging Face transformers)"]
    for f in engines:
        lines.append(f"- {md_text(reference_line(f))}")
        rows = diff_rows(f)
        if rows:
            head = [
                md_text(f.get("engine") or "engine") if c == "engine" else c for c in DIFF_COLUMNS
            ]
            lines += ["", "  | " + " | ".join(head) + " |", "  |" + "---|" * len(head)]
            lines += [
                "  | " + " | ".join(md_text(r[k]) for k in ("label", "engine", "reference",
                                                           "status", "why")) + " |"
                for r in rows
            ]  # fmt: skip
            lines.append("")
    tw = three_way(store)
    if tw is not None:
        if len(tw.legs) > 1:
            lines += ["", "| " + " | ".join(THREE_WAY_COLUMNS) + " |",
                      "|" + "---|" * len(THREE_WAY_COLUMNS)]  # fmt: skip
            lines += [
                "| " + " | ".join(md_text(c) for c in row) + " |" for row in three_way_rows(tw)
            ]
        lines += ["", f"- **Reference verdict** {md_text(verdict_text(tw))}"]
    return lines


def reference_html(store: SessionStore) -> str:
    """The section as HTML (every string escaped)."""
    engines = _engines(store)
    if not engines:
        return ""
    parts = [f"<section><h2>Against the {REFERENCE_LABEL} (Hugging Face transformers)</h2>"]
    for f in engines:
        parts.append(f"<p>{html_text(reference_line(f))}</p>")
        rows = diff_rows(f)
        if rows:
            head = "".join(
                f"<th>{html_text(f.get('engine') or 'engine') if c == 'engine' else c}</th>"
                for c in DIFF_COLUMNS
            )
            body = "".join(
                f"<tr class='cfg-{html_text(r['status'])}'><th>{html_text(r['label'])}</th>"
                f"<td>{html_text(r['engine'])}</td><td>{html_text(r['reference'])}</td>"
                f"<td>{html_text(r['status'])}</td><td class='muted'>{html_text(r['why'])}</td></tr>"
                for r in rows
            )
            parts.append(
                f"<details><summary>Settings ({html_text(f.get('engine'))} vs the "
                f"{REFERENCE_LABEL})</summary><table class='cross'><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table></details>"
            )
    tw = three_way(store)
    if tw is not None:
        if len(tw.legs) > 1:
            head = "".join(f"<th>{html_text(c)}</th>" for c in THREE_WAY_COLUMNS)
            body = "".join(
                "<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in row) + "</tr>"
                for row in three_way_rows(tw)
            )
            parts.append(
                "<table class='cross'><caption>three-way, on the same token ids</caption>"
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            )
        parts.append(f"<p><strong>Reference verdict</strong> {html_text(verdict_text(tw))}</p>")
    parts.append("</section>")
    return "".join(parts)
