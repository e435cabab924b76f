"""`kltui monitor`'s console: a line per probe (when, how long, its load, its verdict, each
server's reading, its recording) and a line per change of reading, with the two recordings
named. Every string from a server goes out as text, never as markup."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from kltui.console import error_console
from kltui.run.monitor import ProbeResult
from kltui.untrusted import one_line
from kltui.words.diagnosis import label
from kltui.words.probe import change_words, clock, error_words, reading_words, standing_words


class ConsoleMonitor:
    """The monitor's view on a console (also the TUI-less `kltui monitor`)."""

    def __init__(self, console: Console, metrics: object | None = None) -> None:
        self.console = console
        self.errors = error_console(console)
        self.metrics = metrics  # outputs/prometheus.MonitorMetrics, when --prometheus

    def probe_started(self, number: int, at: float) -> None:
        pass

    def probe_ended(self, r: ProbeResult) -> None:
        if self.metrics is not None:
            self.metrics.probe_ended(r)  # type: ignore[attr-defined]
        rd = r.reading
        errors = error_words(rd.errors)
        line = (
            f"probe {r.number} · {clock(r.started)} · {r.seconds:.1f} s · {r.requests} requests, "
            f"{rd.tokens} tokens · {rd.verdict or 'no verdict'}"
            + (f" ({errors})" if errors else "")
            + f" · {reading_words(rd)}"
            + (f" · {r.recording}" if r.recording else "")
        )
        self.console.print(Text(one_line(line, 2000)), soft_wrap=True)
        if r.error:
            self.errors.print(Text(one_line(f"kltui monitor: probe {r.number}: {r.error}", 400)))
        for st in r.standings:  # a settled reading's limit, said once per server
            self.console.print(
                Text(one_line(f"reading: {standing_words(st)}", 2000)), soft_wrap=True
            )
        for c in r.changes:
            said = change_words(c, r.started + r.seconds)
            recs = f": {r.recording} (before: {r.before(c)})" if r.recording else ""
            self.console.print(Text(one_line(f"changed: {said}{recs}", 2000)), soft_wrap=True)
        for url in dict.fromkeys(c.server for c in r.changes):
            now = r.reading.server(url)
            if now is not None:  # the diagnosis's own words, once, where the reading changed
                self.console.print(
                    Text(one_line(f"  {url}: {label(now.diagnosis)}", 2000)), soft_wrap=True
                )
        self.console.file.flush()  # a log file or a pipe sees each probe as it ends
