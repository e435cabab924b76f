"""The words of `kltui monitor`'s readings: a probe's line and a change's line, shared by the
console and the TUI (the data are `probe.py`'s)."""

from __future__ import annotations

import time

from kltui.fmt import sci
from kltui.readings.probe import Change, ChangeKind, ProbeError, ProbeReading, ServerProbe

_ERRORS = {
    ProbeError.UNREACHABLE: "no server answered",
    ProbeError.HELPER: "a helper ended in error",
    ProbeError.SERVER: "a server failed mid-probe",
    ProbeError.TIMEOUT: "cut short at --probe-timeout",
    ProbeError.INTERNAL: "kltui failed",
}


def clock(at: float) -> str:
    """A wall-clock time as the monitor prints it (local time, to the second)."""
    return time.strftime("%H:%M:%S", time.localtime(at))


def error_words(errors: tuple[ProbeError, ...]) -> str:
    """The probe's errors, in words ("" when none)."""
    return "; ".join(_ERRORS[e] for e in errors)


def server_words(s: ServerProbe) -> str:
    """One server's reading in a probe, short: its finding and each helper's avg_kl_div (the
    diagnosis's own words are `ServerProbe.label`)."""
    figures = ", ".join(
        f"{h.helper} {sci(h.avg_kl_div) if h.avg_kl_div is not None else h.status or '-'}"
        for h in s.helpers
    )
    return f"{s.finding} ({figures})" if figures else str(s.finding)


def reading_words(r: ProbeReading) -> str:
    """What a probe read, server by server."""
    return "; ".join(f"{s.server}: {server_words(s)}" for s in r.servers) or "nothing read"


def _conditions(kind: str) -> set[str]:
    return set() if kind in ("exact", "unknown") else set(kind.split("+"))


def _named(ids: set[str]) -> str:
    ordered = sorted(ids)
    return f"condition {ordered[0]}" if len(ordered) == 1 else "conditions 1 and 2"


def change_words(c: Change, at: float) -> str:
    """One change between probes: "condition 2 appeared at 14:02:11 on URL, first in sample
    7 (prefill_cache_hit; samples #7, #12)"."""
    when = clock(at)
    where = f" on {c.server}" if c.server else ""
    if c.kind == ChangeKind.APPEARED:
        new = _conditions(c.after) - _conditions(c.before)
        line = f"{_named(new)} appeared at {when}{where}"
        if c.samples:
            shown = ", ".join(f"#{i}" for i in c.samples[:8])
            more = f" and {len(c.samples) - 8} more" if len(c.samples) > 8 else ""
            line += f", first in sample {c.samples[0]} ({'/'.join(c.paths)}; samples {shown}{more})"
        return line
    if c.kind == ChangeKind.CLEARED:
        gone = _conditions(c.before) - _conditions(c.after)
        return f"{_named(gone)} cleared at {when}{where} (now {c.after})"
    if c.kind == ChangeKind.VERDICT:
        return f"verdict {c.before} -> {c.after} at {when}"
    return f"reading {c.before} -> {c.after} at {when}{where}"


def change_short(c: Change) -> str:
    """One change in a few words, for a table cell: "condition 2 appeared, first in sample
    7"."""
    if c.kind == ChangeKind.APPEARED:
        new = _named(_conditions(c.after) - _conditions(c.before))
        return f"{new} appeared" + (f", first in sample {c.samples[0]}" if c.samples else "")
    if c.kind == ChangeKind.CLEARED:
        return f"{_named(_conditions(c.before) - _conditions(c.after))} cleared"
    if c.kind == ChangeKind.VERDICT:
        return f"verdict {c.before} -> {c.after}"
    return f"{c.before} -> {c.after}"
