"""Tail counters of the selected helper, read from its summary (final or live)."""

from __future__ import annotations

import math

from rich.console import Group
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from kltui import fmt
from kltui.metrics.k3 import MIN_SAMPLES_FOR_STABLE_MEAN, within_threshold
from kltui.metrics.summary import Summary
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState
from kltui.tui.widgets.parts import part
from kltui.untrusted import safe
from kltui.words.screen_progress import Unscored, decoding_pace, unscored


def pace(st: HelperState | None) -> Text:
    """While the scored decode runs: its speed and time left, under the waiting line."""
    v = HelperView.of(st) if st is not None and st.phase == "decode" else None
    rate = v.decode_rate if v is not None else None
    if v is None or rate is None:
        return Text()
    return Text(f"\n{decoding_pace(rate, v.decode_eta)}", style="dim")


def _num(v) -> float | None:
    if v is None or isinstance(v, str):
        return None
    return float(v)


class Counters(Static):
    """The selected helper's figures against its gate."""

    DEFAULT_CLASSES = "panel"  # its look: `.panel` in app.tcss
    COMPONENT_CLASSES = {"counters--ok", "counters--warn", "counters--bad", "counters--strong"}

    def show(self, st: HelperState | None, summary: Summary | None, name: str = "") -> None:
        """Show a helper's figures from its summary (final or live); `name`: the helper as the
        helpers panel names it (default: its own name)."""
        title = "counters" if st is None else f"counters · {name or st.helper}"
        self.border_title = safe(title)
        ok, warn, bad = (part(self, f"counters--{k}") for k in ("ok", "warn", "bad"))
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(style="dim", no_wrap=True, min_width=16)
        grid.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
        if st is None or summary is None:
            what = unscored(Unscored.NO_HELPER if st is None else Unscored.NO_SAMPLE)
            self.update(Text(what, style="dim").append_text(pace(st)))
            return
        v = HelperView.of(st, summary)
        s = v.summary
        scored, tau, thr = v.scored, v.tail_threshold, v.threshold
        avg = _num(s.avg_kl_div)
        grid.add_row("tokens scored", Text(f"{(s.tokens or 0):,}", style="bold"))
        avg_t = Text(fmt.sci(avg), style="bold")
        if avg is not None and not math.isnan(avg):
            within = within_threshold(avg, thr)
            avg_t.append("  < " if within else "  ≥ ", style="dim")
            avg_t.append(fmt.sci(thr, 1), style=ok if within else bad)
        grid.add_row("avg_kl_div", avg_t)
        boot = s.bootstrap_95
        if boot and all(isinstance(b, float) and math.isfinite(b) for b in boot) and scored > 1:
            grid.add_row("95% interval", Text(f"{fmt.sci(boot[0], 2)} – {fmt.sci(boot[1], 2)}"))
        tail = Text(fmt.pct(_num(s.tail_fraction)), style="bold")
        tail.append(f"  ({(s.n_tail or 0):,} tokens)", style="dim")
        grid.add_row(f"tail k3 > {fmt.sci(tau, 0)}", tail)
        mx = Text(fmt.sci(_num(s.max_k3)), style="bold")
        if s.max_k3_sample is not None:
            mx.append(f"  sample {s.max_k3_sample} @ {s.max_k3_position}", style="dim")
        grid.add_row("max k3", mx)
        grid.add_row(
            "p50 / p99 k3",
            Text(f"{fmt.sci(_num(s.p50_k3), 2)} / {fmt.sci(_num(s.p99_k3), 2)}"),
        )
        diff = s.samples_with_difference or 0
        grid.add_row(
            "samples differ",
            Text(f"{diff} / {scored}", style=warn if diff else ok),
        )
        grid.add_row("first divergence", Text(fmt.position(s.first_divergence)))
        if s.non_finite_tokens:
            strong_bad = part(self, "counters--bad", "counters--strong")
            grid.add_row("non-finite k3", Text(str(s.non_finite_tokens), style=strong_bad))
        if s.hit_ratio is not None:
            grid.add_row(
                "cache hits",
                Text(f"{(s.hits if s.hits is not None else '?')} ({fmt.pct(s.hit_ratio)})"),
            )
        self.update(Group(grid, *_notes(v, warn, bad)))


def _notes(v: HelperView, warn: Style, bad: Style) -> list[Text]:
    """The lines under the figures: where the gate came from, too few samples, why the helper
    did not pass cleanly."""
    s, scored = v.summary, v.scored
    notes: list[Text] = []
    if 0 < scored < MIN_SAMPLES_FOR_STABLE_MEAN:
        notes.append(
            Text(
                f"⚠ {scored} samples scored (< {MIN_SAMPLES_FOR_STABLE_MEAN}): the mean is "
                "tail-driven and can swing ~3x",
                style=warn,
            )
        )
    for note in (s.reason, s.hit_failure, s.error):
        if note:
            notes.append(safe(f"⚠ {note}", style=bad, limit=200))
    if v.threshold_source is not None:
        # wrapped under the figures: a grid cell cut it ("default 0.002 (SGLang CI…")
        source = Text("gate from ", style="dim")
        source.append_text(safe(v.threshold_source.label))
        notes.insert(0, source)
    return notes
