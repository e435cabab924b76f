"""Server A against server B on the same prompt ids: per helper, are the values bit-identical,
and where and on which side do they first differ (`compare.cross_server`)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from kltui import fmt
from kltui.readings.cross_server import ServerPair
from kltui.tui.screens.modal import BoxModal
from kltui.untrusted import safe
from kltui.words.compare import first_difference
from kltui.words.cross_server import reading_line, uncompared

MAX_ROWS = 40  # differing samples listed per helper; the JSON report has them all


def pair_group(pair: ServerPair, vars_: dict) -> Group:
    """One server pair's comparison as a renderable."""
    x, y = pair.servers
    head = Text("A ", style="bold").append_text(safe(x))
    head.append("  vs  B ", style="bold")
    head.append_text(safe(y))
    colour = {True: "kl-ok", False: "kl-warn", None: ""}[pair.identical]
    parts: list = [head, safe(reading_line(pair), style=vars_.get(colour, ""))]
    for k, (a, b) in pair.settings_differ.items():
        parts.append(safe(f"  {k}: {a} vs {b}", style="dim"))
    for helper, why in uncompared(pair).items():
        parts.append(
            Text.assemble((f"{helper}: ", "bold"), "not compared: ").append_text(
                safe(why, style=vars_.get("kl-warn", ""))
            )
        )
    for helper, c in pair.helpers.items():
        if c.identical is None:
            continue  # listed above, with why
        a, b = c.avg_kl_div
        title = Text.assemble(
            (f"{helper}: ", "bold"),
            f"{c.diff.identical_samples}/{c.diff.comparable} samples identical · ",
            first_difference(c.diff),
            f" · avg_kl_div A {fmt.sci(a)}, B {fmt.sci(b)}",
        )
        parts.append(title)
        rows = [s for s in c.diff.samples if not s.identical]
        if not rows:
            continue
        t = Table(box=None, header_style="bold", pad_edge=False)
        for col in (
            "sample",
            "first pos",
            "side",
            "ids differ @",
            "max |Δ| prefill",
            "max |Δ| decode",
        ):
            t.add_column(col, justify="right" if col != "side" else "left")
        for s in rows[:MAX_ROWS]:
            t.add_row(
                str(s.sample),
                str(s.first),
                str(s.side),
                "–" if s.ids_first is None else str(s.ids_first),
                fmt.sci(s.prefill_max_abs),
                fmt.sci(s.decode_max_abs),
            )
        parts.append(t)
        if len(rows) > MAX_ROWS:
            parts.append(Text(f"… {len(rows) - MAX_ROWS} more differing samples", style="dim"))
    parts.append(Text(""))
    return Group(*parts)


class CompareScreen(BoxModal):
    """The modal comparing servers of one run, bit for bit."""

    BINDINGS = [Binding("escape,q,c", "app.pop_screen", "Close", id="compare.close")]

    BOX_TITLE = "servers compared · same prompt ids, bit for bit"

    def __init__(self, pairs: list[ServerPair], vars_: dict) -> None:
        super().__init__()
        self.pairs = list(pairs)
        self.vars_ = dict(vars_)

    def body(self) -> ComposeResult:
        """The server pairs."""
        yield Static(Group(*(pair_group(p, self.vars_) for p in self.pairs)), id="compare-detail")
