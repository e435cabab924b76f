"""`kltui check`'s console for the HF reference: per engine one line and its config diff, then
the three-way table (SGLang vs HF reference, vLLM vs HF reference, SGLang vs vLLM, all on the
same ids) and the verdict line. The text is `reference_rows.py`'s; values that came from a
server or a file go through `untrusted`."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

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
from kltui.readings.three_way import ThreeWayKind, three_way
from kltui.session.helper_view import HelperView
from kltui.session.store import SessionStore
from kltui.untrusted import safe

_STATUS = {"match": "green", "mismatch": "yellow", "unknown": "magenta", "info": "dim"}
# the verdict's style: an engine closer in green, no second engine plain, inconclusive in yellow
_STYLE = {ThreeWayKind.CLOSER: "bold green", ThreeWayKind.ONE_ENGINE: "bold"}


def diff_table(figures) -> Table | None:
    """The config diff of one engine against the reference."""
    rows = diff_rows(figures)
    if not rows:
        return None
    engine = str(figures.get("engine") or "engine")
    t = Table(title=f"settings ({engine} vs {REFERENCE_LABEL})", title_justify="left")
    for col in DIFF_COLUMNS:
        t.add_column(engine if col == "engine" else col)
    for r in rows:
        style = _STATUS.get(r["status"], "")
        if r["status"] == "mismatch" and r["severity"] == "refuse":
            style = "bold red"
        t.add_row(
            safe(r["label"], limit=60),
            safe(r["engine"], limit=60),
            safe(r["reference"], limit=60),
            safe(r["status"], style),
            safe(r["why"], "dim", limit=120),
        )
    return t


def print_reference(console: Console, store: SessionStore) -> None:
    """Every engine against the reference, then the three-way table and its verdict."""
    for st in store.helpers.values():
        if not is_reference(st):
            continue
        figures = HelperView.of(st).figures
        console.print(
            Text.assemble((f"{st.helper}: ", "bold"), safe(reference_line(figures))),
            soft_wrap=True,
        )
        if (table := diff_table(figures)) is not None:
            console.print(table)
    tw = three_way(store)
    if tw is None:
        return
    if len(tw.legs) > 1:
        t = Table(
            title=f"three-way, on the same token ids ({REFERENCE_LABEL}: {tw.reference})",
            title_justify="left",
        )
        for col in THREE_WAY_COLUMNS:
            t.add_column(col)
        for row in three_way_rows(tw):
            t.add_row(*(safe(c) for c in row))
        console.print(t)
    head = "closer to the reference: " if tw.kind is ThreeWayKind.CLOSER else "reference: "
    console.print(
        Text.assemble((head, _STYLE.get(tw.kind, "bold yellow")), safe(verdict_text(tw))),
        soft_wrap=True,
    )
