"""Tail counters of the selected helper, read from its summary (final or live)."""

from __future__ import annotations

import math

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from kltui import fmt
from kltui.metrics import MIN_SAMPLES_FOR_STABLE_MEAN
from kltui.session import HelperState
from kltui.tui.text import safe


def _num(v) -> float | None:
    if v is None or isinstance(v, str):
        return None
    return float(v)


class Counters(Static):
    DEFAULT_CSS = """
    Counters {
        height: auto;
        border: round $primary 40%;
        border-title-color: $primary;
        padding: 0 1;
    }
    """

    def show(self, st: HelperState | None, summary: dict | None, vars_: dict) -> None:
        self.border_title = safe("counters" if st is None else f"counters · {st.helper}")
        ok, warn, bad = vars_.get("kl-ok"), vars_.get("kl-warn"), vars_.get("kl-bad")
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(style="dim", no_wrap=True, min_width=16)
        grid.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
        if st is None or summary is None:
            what = "no helper selected" if st is None else "waiting for the first scored sample"
            self.update(Text(what, style="dim"))
            return
        s = summary
        scored = s.get("scored", st.n_scored)
        tau = s.get("tail_threshold", st.tail_threshold)
        avg = _num(s.get("avg_kl_div"))
        grid.add_row("tokens scored", Text(f"{s.get('tokens', 0):,}", style="bold"))
        avg_t = Text(fmt.sci(avg), style="bold")
        if avg is not None and not math.isnan(avg):
            within = avg < st.threshold
            avg_t.append("  < " if within else "  ≥ ", style="dim")
            avg_t.append(fmt.sci(st.threshold, 1), style=ok if within else bad)
        grid.add_row("avg_kl_div", avg_t)
        boot = s.get("bootstrap_95")
        if boot and all(isinstance(b, float) and math.isfinite(b) for b in boot) and scored > 1:
            grid.add_row("95% interval", Text(f"{fmt.sci(boot[0], 2)} – {fmt.sci(boot[1], 2)}"))
        tail = Text(fmt.pct(_num(s.get("tail_fraction"))), style="bold")
        tail.append(f"  ({s.get('n_tail', 0):,} tokens)", style="dim")
        grid.add_row(f"tail k3 > {fmt.sci(tau, 0)}", tail)
        mx = Text(fmt.sci(_num(s.get("max_k3"))), style="bold")
        if s.get("max_k3_sample") is not None:
            mx.append(f"  sample {s['max_k3_sample']} @ {s['max_k3_position']}", style="dim")
        grid.add_row("max k3", mx)
        grid.add_row(
            "p50 / p99 k3",
            Text(f"{fmt.sci(_num(s.get('p50_k3')), 2)} / {fmt.sci(_num(s.get('p99_k3')), 2)}"),
        )
        diff = s.get("samples_with_difference", 0)
        grid.add_row(
            "samples differ",
            Text(f"{diff} / {scored}", style=(warn if diff else ok) or ""),
        )
        grid.add_row("first divergence", Text(fmt.position(s.get("first_divergence"))))
        if s.get("non_finite_tokens"):
            grid.add_row("non-finite k3", Text(str(s["non_finite_tokens"]), style=f"bold {bad}"))
        if s.get("hit_ratio") is not None:
            grid.add_row("cache hits", Text(f"{s.get('hits', '?')} ({fmt.pct(s['hit_ratio'])})"))
        notes: list[Text] = []
        if 0 < scored < MIN_SAMPLES_FOR_STABLE_MEAN:
            notes.append(
                Text(
                    f"⚠ {scored} samples scored (< {MIN_SAMPLES_FOR_STABLE_MEAN}): the mean is "
                    "tail-driven and can swing ~3x",
                    style=warn or "",
                )
            )
        for key in ("reason", "hit_failure", "error"):
            if s.get(key):
                notes.append(safe(f"⚠ {s[key]}", style=bad or "", limit=200))
        if s.get("threshold_source"):
            source = safe(s["threshold_source"], style="dim")
            source.no_wrap, source.overflow = True, "ellipsis"
            grid.add_row("gate from", source)
        self.update(Group(grid, *notes))
