"""What the TUI's monitor screen shows of the probes so far, as data: a row per probe (newest
first), each helper's avg_kl_div along the probes for its strip, and the monitor's head line.
The words come from `words/probe.py`; nothing here reads a store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kltui.readings.probe_changes import ChangeKind
from kltui.run.monitor import ProbeResult
from kltui.words.diagnosis import label
from kltui.words.probe import (
    change_short,
    change_words,
    clock,
    error_words,
    finding_words,
    standing_words,
)


@dataclass(frozen=True)
class ProbeRow:
    """One probe as the table shows it."""

    number: int
    cells: tuple[str, ...]  # when, seconds, load, verdict, reading, change
    changed: bool  # a change of reading: the row is marked
    failed: bool  # the probe measured nothing (an error) or failed its gates
    detail: str  # the highlighted probe in full: each server's reading and the recording


COLUMNS = ("#", "time", "s", "requests / tokens", "verdict", "reading", "changed")


def _reading(r: ProbeResult) -> str:
    servers = r.reading.servers
    if not servers:
        return error_words(r.reading.errors) or "nothing read"
    if len(servers) == 1:
        return finding_words(servers[0])
    return ", ".join(f"{i + 1}: {finding_words(s)}" for i, s in enumerate(servers))


def probe_rows(history: Sequence[ProbeResult]) -> list[ProbeRow]:
    """A row per probe, the newest first."""
    rows = []
    for r in reversed(history):
        rd = r.reading
        # the verdict column shows a change of verdict; the cell says what else changed
        said = [c for c in r.changes if c.kind != ChangeKind.VERDICT] or list(r.changes)
        change = "; ".join(change_short(c) for c in said)
        detail = "\n".join(
            [f"recording: {r.recording or 'not recorded'}"]
            + [change_words(c, r.started + r.seconds) for c in r.changes]
            + [standing_words(st) for st in r.standings]
            + [f"{s.server}: {label(s.diagnosis)}" for s in rd.servers]
            + ([f"errors: {error_words(rd.errors)}"] if rd.errors else [])
            + ([f"kltui: {r.error}"] if r.error else [])
        )
        rows.append(
            ProbeRow(
                number=r.number,
                cells=(
                    str(r.number),
                    clock(r.started),
                    f"{r.seconds:.1f}",
                    f"{r.requests} / {rd.tokens}",
                    rd.verdict or "-",
                    _reading(r),
                    change,
                ),
                changed=bool(r.changes),
                failed=not rd.measured or rd.verdict == "fail",
                detail=detail,
            )
        )
    return rows


def helpers_of(history: Sequence[ProbeResult]) -> list[str]:
    """Every helper any probe ran, in the order first seen."""
    seen: dict[str, None] = {}
    for r in history:
        for s in r.reading.servers:
            for h in s.helpers:
                seen.setdefault(h.helper, None)
    return list(seen)


def series(
    history: Sequence[ProbeResult], helper: str, server: str | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(avg_kl_div, a, b) along the probes, oldest first, for a k3 strip: the worst server's
    avg_kl_div (or `server`'s); a and b equal where it was exactly 0 (bit-identical) and apart
    where it was not; NaN where the probe measured no value (an error: drawn as the alarm)."""
    values = np.full(len(history), np.nan)
    for i, r in enumerate(history):
        got = [
            h.avg_kl_div
            for s in r.reading.servers
            if server is None or s.server == server
            for h in s.helpers
            if h.helper == helper and h.avg_kl_div is not None
        ]
        if got:
            values[i] = max(got)
    a = np.zeros(len(history))
    b = np.where(values == 0, 0.0, 1.0)
    return values, a, b


def head_line(servers: Sequence[str], every: float, probes: int, metrics: str | None) -> str:
    """The monitor's line: what it probes, how often, how many so far, where the metrics are."""
    what = ", ".join(servers) or "no server"
    line = f"probing {what} every {every:g} s · {probes} probe(s) so far"
    return line + (f" · metrics on {metrics}" if metrics else "")
