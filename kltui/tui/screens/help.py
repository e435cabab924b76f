"""`?`: every key (as remapped by the config's keymap) and what the numbers mean."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from kltui.metrics import scale
from kltui.tui.screens.modal import BoxModal
from kltui.words.screen_keys import key_what

EXPLAIN = [
    (
        "k3",
        "per token: exp(r) − 1 − r with r = lp_A − lp_B (A = fresh prefill, B = decode); "
        "≥ 0, and exactly 0 only when both logprobs are bit-identical.",
    ),
    (
        "avg_kl_div",
        "SGLang's gate: the mean over samples of each sample's mean k3; it passes "
        "below the threshold for (model, tp). Below 32 samples it is tail-driven.",
    ),
    ("tail", "share of tokens with k3 > tau (the tail threshold), and their count."),
    ("first divergence", "first generated position whose two logprobs differ at all (◆)."),
    ("condition 1", "batch-variant kernels: every helper shows similar noise."),
    (
        "condition 2",
        "a state bug on one path: match is exact (or far lower) but a cache-hit helper diverges.",
    ),
    (
        "heatmap",
        f"rows = samples, columns = generated positions; one colour per decade of "
        f"k3 from 1e{scale.LOW_EXP} to 1e{scale.HIGH_EXP}; zoomed out, a cell shows the "
        "max over its tokens; grey = decoded, not scored yet.",
    ),
]


def keys_table(
    groups: list[tuple[str, list[Binding]]], keymap: dict[str, str], display=None
) -> Table:
    """Every key of each group as a table (with the user's remapping)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(style="dim", no_wrap=True)
    for title, bindings in groups:
        table.add_row(Text(title, style="bold underline"), "", "")
        for b in bindings:
            keys = keymap.get(b.id or "", b.key) if b.id else b.key
            parts = [k.strip() for k in keys.split(",")]
            if display is not None:
                parts = [display(Binding(k, "")) for k in parts]
            shown = ", ".join(parts)
            # where the key applies, when not everywhere (`a`, `m`)
            what = key_what(b.description or b.action, b.tooltip)
            table.add_row(shown, what, b.id or "")
        table.add_row("", "", "")
    return table


class HelpScreen(BoxModal):
    """The modal listing every key."""

    BINDINGS = [Binding("escape,question_mark,q", "app.pop_screen", "Close", id="help.close")]

    BOX_TITLE = "kltui help"
    BOX_SUBTITLE = "esc closes · remap keys with `keymap:` in the config (binding ids)"

    def __init__(self, groups: list[tuple[str, list[Binding]]], keymap: dict[str, str]) -> None:
        super().__init__()
        self.groups, self.keymap = groups, keymap

    def body(self) -> ComposeResult:
        """The key tables and what the numbers mean."""
        explain = Table.grid(padding=(0, 2))
        explain.add_column(style="bold", no_wrap=True)
        explain.add_column()
        for k, v in EXPLAIN:
            explain.add_row(k, v)
        yield Static(
            Group(
                Text("Keys", style="bold"),
                keys_table(self.groups, self.keymap, self.app.get_key_display),
                Text("What the numbers mean", style="bold"),
                explain,
            )
        )
