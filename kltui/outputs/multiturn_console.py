"""`kltui check`'s multiturn section: the branch tree as a table (group > branch > turn), each
turn's hit against SGLang's assert and its k3, then the reading's lines (words/multiturn.py)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kltui import fmt
from kltui.outputs.reports.multiturn_json import reading_of
from kltui.readings.multiturn import HitKind, MultiturnReading
from kltui.session.store import SessionStore
from kltui.untrusted import one_line
from kltui.words.multiturn import HIT_WORDS, expected_text, reading_lines


def turn_table(m: MultiturnReading, title: str) -> Table:
    """One row per turn, in tree order."""
    t = Table(title=title, title_justify="left")
    for col in ("conversation", "turn", "history", "cached", "expected", "hit", "mean k3"):
        t.add_column(col, justify="left" if col in ("conversation", "expected", "hit") else "right")
    t.add_column("max k3", justify="right")
    t.add_column("first divergence", justify="right")
    for r in m.rows:
        bad = r.divergent or r.hit in (HitKind.SHORT, HitKind.OFF)
        t.add_row(
            r.place.label,
            str(r.place.turn),
            str(r.place.history),
            str(r.place.cached_tokens),
            expected_text(r.expected),
            HIT_WORDS[r.hit],
            fmt.sci(r.mean_k3),
            fmt.sci(r.max_k3),
            "none" if r.first_divergence is None else str(r.first_divergence),
            style="bold red" if bad else None,
        )
    return t


def print_multiturn(console: Console, store: SessionStore) -> None:
    """The multiturn section of every multiturn helper that scored a turn."""
    several = len({st.server for st in store.helpers.values()}) > 1
    for st in store.helpers.values():
        m = reading_of(store, st)
        if m is None:
            continue
        title = f"{st.helper} on {one_line(st.server)}" if several else st.helper
        console.print(turn_table(m, f"{title}: group > branch > turn"))
        for line in reading_lines(m):
            console.print(Text("  · " + line), soft_wrap=True)
