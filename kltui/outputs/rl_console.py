"""`kltui import`'s console: the file, then kltui's k3 figures, verl's and slime's metrics,
the gates, the reading and every bad record, read from the store (nothing computed here)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from kltui.console import make_console
from kltui.fmt import sci
from kltui.readings.imported import rescored
from kltui.rl.rescore import SERVER_VS_ROLLOUT, TRAINER_VS_SERVER
from kltui.session.events import (
    Event,
    HelperFinished,
    HelperStarted,
    Problem,
    RunFinished,
    RunStarted,
    SampleScored,
)
from kltui.untrusted import console_markup
from kltui.words.rl import differing_line, reading_words, rescore_lines

SHOWN_BAD = 20  # bad records printed (all are in the reports and the JSON)
SHOWN_TOKENS = 8  # rows of the three-column table


def rl_of(summary_raw: dict) -> dict:
    """The summary's `rl` object ({} when it has none)."""
    rl = summary_raw.get("rl")
    return rl if isinstance(rl, dict) else {}


def metric_rows(values: dict) -> list[tuple[str, str]]:
    """(name, value) per metric, in the owner's order."""
    return [(str(k), sci(v) if isinstance(v, int | float) else str(v)) for k, v in values.items()]


class ImportConsole:
    """A view of the import's events: a line when it starts, the tables when it ends."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or make_console()
        self.bad_printed = 0
        self.rescored: dict[str, dict] = {}  # helper -> summary, of the --server helpers
        # sample -> (token ids, trainer, server now) and (server now, rollout): the 3 columns
        self.trainer_server: dict[int, SampleScored] = {}
        self.server_rollout: dict[int, SampleScored] = {}

    def __call__(self, ev: Event) -> None:
        c = self.console
        match ev:
            case RunStarted():
                ps = ev.prompt_set
                if ps.get("source") == "import":
                    n = ps.get("n")
                    size = ps.get("bytes") or 0
                    c.print(
                        f"import [bold]{console_markup(ps.get('path'))}[/]: "
                        f"{console_markup(ps.get('adapter'))} "
                        f"(checked against {console_markup(ps.get('checked_against'))}), "
                        f"{size / 1e6:.1f} MB" + (f", {n} records" if n is not None else "")
                    )
            case HelperStarted():
                pass
            case Problem():
                if self.bad_printed < SHOWN_BAD:
                    c.print(
                        console_markup(f"{ev.source}: {ev.message}"), style="yellow", soft_wrap=True
                    )
                self.bad_printed += 1
            case SampleScored() if ev.helper == TRAINER_VS_SERVER:
                self.trainer_server[ev.sample] = ev
            case SampleScored() if ev.helper == SERVER_VS_ROLLOUT:
                self.server_rollout[ev.sample] = ev
            case HelperFinished() if "rl" in ev.summary:
                self.finished(ev.summary)
            case HelperFinished():
                self.rescored[ev.helper] = ev.summary
                s = ev.summary
                c.print(
                    f"server now · {console_markup(ev.helper)} on {console_markup(ev.server)}: "
                    f"avg_kl_div {sci(s.get('avg_kl_div'))}, {s.get('samples_with_difference')} "
                    f"of {s.get('scored')} samples differ",
                    soft_wrap=True,
                )
            case RunFinished() if self.rescored:
                self.three_columns()

    def finished(self, s: dict) -> None:
        """The result tables of one finished import helper."""
        c = self.console
        rl = rl_of(s)
        if not rl:
            return
        if self.bad_printed > SHOWN_BAD:
            c.print(f"... {self.bad_printed - SHOWN_BAD} more problem(s) in the reports")
        head = Table(title="trainer (A) vs rollout (B): k3 per token", title_justify="left")
        for col in ("records", "usable", "tokens", "avg_kl_div", "p99 k3", "max k3", "tail"):
            head.add_column(col, justify="right")
        head.add_row(
            str(rl.get("records")),
            str(rl.get("usable")),
            str(s.get("tokens")),
            sci(s.get("avg_kl_div")),
            sci(s.get("p99_k3")),
            sci(s.get("max_k3")),
            f"{s.get('n_tail')} (τ {sci(s.get('tail_threshold'))})",
        )
        c.print(head)
        for title, key in (
            ("verl 0.9.1 rollout_corr/*", "verl"),
            (f"slime v0.3.1 mismatch (veto {sci(rl.get('slime_veto_threshold'))})", "slime"),
        ):
            values = rl.get(key)
            if not isinstance(values, dict):
                continue
            t = Table(title=title, title_justify="left")
            t.add_column("metric")
            t.add_column("value", justify="right")
            for name, value in metric_rows(values):
                t.add_row(name, value)
            c.print(t)
        reading = reading_words(rl.get("reading"))
        c.print(f"[bold]reading:[/] {console_markup(reading.get('label'))}", soft_wrap=True)
        if line := differing_line(rl.get("differing_samples") or {}):
            c.print(f"  {console_markup(line)}", soft_wrap=True)
        for line in reading.get("evidence") or []:
            c.print(f"  · {console_markup(line)}", soft_wrap=True)
        if reading.get("next_step"):
            c.print(f"  next: {console_markup(reading['next_step'])}", soft_wrap=True)
            if reading.get("next_command"):
                c.print(f"        {console_markup(reading['next_command'])}", soft_wrap=True)
        for g in rl.get("gates") or []:
            mark = "[green]PASS[/]" if g.get("passed") else "[red]FAIL[/]"
            c.print(f"gate {console_markup(g.get('gate'))}: {sci(g.get('value'))} {mark}")
        if rl.get("bad_records"):
            c.print(
                f"[red]{rl['bad_records']} record(s) could not be used[/] (exit 2); "
                "every figure above covers the others"
            )

    def three_columns(self) -> None:
        """After --server: the reading, and the tokens where the three numbers differ most."""
        c = self.console
        r = self.rescored
        found = rescored(r.get(SERVER_VS_ROLLOUT), r.get(TRAINER_VS_SERVER), r.get("match"))
        for line in rescore_lines(found):
            c.print(f"[bold]server now:[/] {console_markup(line)}", soft_wrap=True)
        rows = []
        for sample, ts in self.trainer_server.items():
            sr = self.server_rollout.get(sample)
            if sr is None:
                continue
            spread = abs(ts.lp_a - sr.lp_b) + abs(ts.lp_a - ts.lp_b) + abs(sr.lp_a - sr.lp_b)
            for pos in spread.argsort()[::-1][:SHOWN_TOKENS]:
                if spread[pos] > 0:
                    rows.append((float(spread[pos]), sample, int(pos), ts, sr))
        if not rows:
            return
        t = Table(
            title="per token: trainer / rollout as recorded / server now", title_justify="left"
        )
        for col in ("sample", "pos", "token", "trainer", "rollout", "server now"):
            t.add_column(col, justify="right")
        for _, sample, pos, ts, sr in sorted(rows, key=lambda x: -x[0])[:SHOWN_TOKENS]:
            t.add_row(
                str(sample),
                str(pos),
                str(int(ts.token_ids[pos])),
                f"{ts.lp_a[pos]:.6f}",
                f"{sr.lp_b[pos]:.6f}",
                f"{ts.lp_b[pos]:.6f}",
            )
        c.print(t)
