"""The words of `kltui monitor`'s readings: a probe's line, a change's line and a settled
reading's statement, shared by the console and the TUI (the data are `readings/probe.py`'s and
`readings/probe_changes.py`'s)."""

from __future__ import annotations

import time

from kltui.fmt import sci
from kltui.readings.findings import Finding, Kind
from kltui.readings.limit import Limit
from kltui.readings.probe import ProbeError, ProbeReading, ServerProbe
from kltui.readings.probe_changes import Change, ChangeKind, LimitKind, Standing
from kltui.words.advice import command

_ERRORS = {
    ProbeError.UNREACHABLE: "no server answered",
    ProbeError.HELPER: "a helper ended in error",
    ProbeError.SERVER: "a server failed mid-probe",
    ProbeError.TIMEOUT: "cut short at --probe-timeout",
    ProbeError.INTERNAL: "kltui failed",
}
_KINDS = {
    Kind.EXACT: "exact",
    Kind.ONE: "condition 1",
    Kind.TWO: "condition 2 (state bug)",
    Kind.BOTH: "conditions 1 and 2",
    Kind.UNKNOWN: "inconclusive",
}


def clock(at: float) -> str:
    """A wall-clock time as the monitor prints it (local time, to the second)."""
    return time.strftime("%H:%M:%S", time.localtime(at))


def error_words(errors: tuple[ProbeError, ...]) -> str:
    """The probe's errors, in words ("" when none)."""
    return "; ".join(_ERRORS[e] for e in errors)


def keep_words(keep: int, per_probe: int) -> str:
    """The monitor's retention, said at start: "keeping the last 288 probes' recordings (~24
    MB); --keep N"."""
    mb = keep * per_probe / 1e6
    size = f"~{mb:.0f} MB" if mb >= 10 else f"~{mb:.1f} MB"
    return f"keeping the last {keep} probes' recordings ({size}); --keep N"


def finding_words(s: ServerProbe) -> str:
    """A server's reading in a word or two: the diagnosis's finding, except the settled
    condition 1 of a probe too small to exclude a state bug (its limit is said once)."""
    return "condition 1" if s.finding is Finding.NOT_EXCLUDED else str(s.finding)


def server_words(s: ServerProbe) -> str:
    """One server's reading in a probe, short: its finding and each helper's avg_kl_div (the
    diagnosis's own words are `words.diagnosis.label(ServerProbe.diagnosis)`)."""
    figures = ", ".join(
        f"{h.helper} {sci(h.avg_kl_div) if h.avg_kl_div is not None else h.status or '-'}"
        for h in s.helpers
    )
    return f"{finding_words(s)} ({figures})" if figures else finding_words(s)


def reading_words(r: ProbeReading) -> str:
    """What a probe read, server by server."""
    return "; ".join(f"{s.server}: {server_words(s)}" for s in r.servers) or "nothing read"


def _conditions(kind: str) -> set[str]:
    return set() if kind in ("exact", "unknown") else set(kind.split("+"))


def _named(ids: set[str]) -> str:
    ordered = sorted(ids)
    return f"condition {ordered[0]}" if len(ordered) == 1 else "conditions 1 and 2"


def _settings(c: Change) -> str:
    return ", ".join(k if k == "startup_time" else f"{k} {a} -> {b}" for k, a, b in c.settings)


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
        return f"verdict {c.before} -> {c.after} at {when}{where}"
    if c.kind == ChangeKind.REPLACED:
        since = f" since probe {c.since}" if c.since is not None else ""
        return f"server replaced at {when}{where}: another process{since} ({_settings(c)})"
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
    if c.kind == ChangeKind.REPLACED:
        return "server replaced"
    return f"{c.before} -> {c.after}"


def _paths(limits: tuple[Limit, ...]) -> str:
    return ", ".join(f"{lim.helper} {lim.k} of {lim.n}" for lim in limits)


def standing_words(s: Standing) -> str:
    """A settled reading and what it rules out, said once: "condition 1 on URL: ..."."""
    head = f"{_KINDS[s.kind]} on {s.server}"
    if s.limit == LimitKind.NOT_TESTED:
        return f"{head}; no cache path compared: condition 2 not tested"
    open_ = [lim for lim in s.limits if not lim.reached]
    if s.limit == LimitKind.NOT_EXCLUDED:
        n = max(lim.n for lim in open_)
        cmd = f"; for a limit: {command(s.next_command)}" if s.next_command else ""
        return (
            f"{head}; a probe of {n} samples is too small to rule out a state bug on "
            f"{', '.join(lim.helper for lim in open_)}: read as condition 1 from here on "
            f"(said once){cmd}"
        )
    exact = s.kind == Kind.EXACT
    size = "making samples differ" if exact else f"at >= x{s.limits[0].factor:g} its noise"
    return (
        f"{head}; each probe rules out a state bug {size} in at least "
        f"{_paths(s.limits)} samples (said once)"
    )
