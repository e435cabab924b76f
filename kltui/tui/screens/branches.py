"""The multiturn branch tree (`t` on the dashboard): group > branch > turn, each turn with a
one-line k3 strip on the fixed k3 scale, its hit against SGLang's assert (actual / expected)
and its mean k3; Enter on a turn opens that turn's drill-down (its logprobs)."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from kltui import fmt
from kltui.metrics import scale
from kltui.readings.multiturn import HitKind, MultiturnReading, TurnRow
from kltui.session.store import HelperState
from kltui.tui import heat
from kltui.tui.screens.modal import BoxModal
from kltui.tui.widgets.kstrip import BARS, ROWS, columns
from kltui.words.multiturn import HIT_WORDS, expected_text

STRIP = 24  # columns of a turn's strip


def strip(st: HelperState, sample: int, palette: heat.Palette | None, width: int = STRIP) -> Text:
    """One line of bars: a turn's k3 along its positions, on the fixed decades."""
    s = st.book.samples.get(sample)
    if s is None:
        return Text("·" * width, style="dim")
    height, levels = columns(s.k3, s.lp_a, s.lp_b, width)
    t = Text(no_wrap=True)
    for h, lv in zip(height.tolist(), levels.tolist(), strict=True):
        style = palette.fg[int(lv)] if palette else Style()
        ch = "·" if lv == scale.ZERO else BARS[min(8, max(1, round(h / ROWS)))]
        t.append(ch, style=style)
    return t


def _bad_style(palette: heat.Palette | None) -> Style:
    """A short hit in the theme's hottest heat colour (no colour named in Python: app.tcss and
    the themes own them), bold."""
    return (palette.fg[-1] if palette else Style()) + Style(bold=True)


def turn_label(st: HelperState, r: TurnRow, palette: heat.Palette | None) -> Text:
    """A turn leaf: its number, k3 strip, hit (actual / expected) and mean k3."""
    bad = r.hit in (HitKind.SHORT, HitKind.OFF)
    hit = Text(
        f"cached {r.place.cached_tokens} / expected {expected_text(r.expected)} "
        f"({HIT_WORDS[r.hit]})",
        style=_bad_style(palette) if bad else "",
    )
    first = "" if r.first_divergence is None else f" from position {r.first_divergence}"
    k3 = Text(f"mean k3 {fmt.sci(r.mean_k3)}{first}", style="bold" if r.divergent else "dim")
    return Text.assemble(
        f"turn {r.place.turn}  ", strip(st, r.sample, palette), "  ", hit, "  ", k3
    )


class BranchTree(BoxModal[int | None]):
    """The branch tree of one multiturn helper; dismissed with the turn's sample on Enter."""

    BOX = Vertical
    BINDINGS = [Binding("escape,q,t", "app.pop_screen", "Close", id="branches.close")]
    BOX_SUBTITLE = "enter opens a turn's logprobs · esc closes"

    def __init__(
        self, st: HelperState, reading: MultiturnReading, palette: heat.Palette | None
    ) -> None:
        super().__init__()
        self.st, self.reading, self.palette = st, reading, palette

    def box_title(self) -> str:
        """The helper and how many of its turns diverge."""
        m = self.reading
        return f"{self.st.helper}: {len(m.divergent)} of {len(m.rows)} turns diverge"

    def body(self) -> ComposeResult:
        """The tree, every node open."""
        tree: Tree[int | None] = Tree("conversations", id="branch-tree")
        tree.show_root = False
        groups: dict[int, TreeNode[int | None]] = {}
        branches: dict[tuple[int, int], TreeNode[int | None]] = {}
        for r in self.reading.rows:
            g, b = r.place.group, r.place.branch
            if g not in groups:
                groups[g] = tree.root.add(f"group {g}", expand=True)
            if (g, b) not in branches:
                branches[(g, b)] = groups[g].add(f"branch {b} ({r.place.label})", expand=True)
            branches[(g, b)].add_leaf(turn_label(self.st, r, self.palette), data=r.sample)
        yield tree

    def on_mount(self) -> None:
        """Keys go to the tree, its cursor on the first group."""
        tree = self.query_one(Tree)
        tree.focus()
        tree.cursor_line = 0

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        """Enter on a turn: close with its sample (the app opens its drill-down)."""
        if event.node.data is not None:
            self.dismiss(event.node.data)
