"""What changed between probes of `kltui monitor`, server by server: each server's reading is
compared with the last probe that read it (a probe where it did not answer is an error, counted
as such, and the reading after it is compared with the one before), so a restart that brings a
state bug in says "condition 2 appeared", and a server that is another process than the one
read before (a new startup time) is a change of its own. What a settled reading rules out
(`Standing`) is said once per server, when it is first read and after its conditions change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from kltui.engines.identity import process_changes, shown_value
from kltui.readings.diagnosis_parts import Command
from kltui.readings.findings import Finding, Kind
from kltui.readings.limit import Limit
from kltui.readings.probe import ProbeReading, ServerProbe
from kltui.session.events import RunVerdict


class ChangeKind(StrEnum):
    """What differs between two readings of one server (`kltui_reading_changes_total`'s
    `change` label)."""

    REPLACED = "replaced"  # another server process answers (a new startup time, other settings)
    APPEARED = "appeared"  # a condition broken now that was not before (2 after 0, 1+2 after 1)
    CLEARED = "cleared"  # a condition broken before that is not now
    FINDING = "finding"  # the same conditions, another finding (e.g. exact -> stray ulps)
    VERDICT = "verdict"  # the server's verdict (pass, fail, error) changed


@dataclass(frozen=True)
class Change:
    """A reading that changed between two probes of one server."""

    server: str
    kind: ChangeKind
    before: str  # the earlier reading (a Kind, a finding or a verdict; REPLACED: "")
    after: str
    # the samples named on the state-bug paths (APPEARED of condition 2), the first to differ
    # first
    samples: tuple[int, ...] = ()
    paths: tuple[str, ...] = ()
    since: int | None = None  # the probe the change is against (the last one that read it)
    # REPLACED: each launch-time value that differs, (key, before, after) as shown
    settings: tuple[tuple[str, str, str], ...] = ()


class LimitKind(StrEnum):
    """What a settled reading (exact, or condition 1) says of condition 2 at the probe's size."""

    EXCLUDED = "excluded"  # each cache path's limit is reached: a state bug that size would show
    NOT_EXCLUDED = "not excluded"  # some cache path's is not: the probe is too small to say
    NOT_TESTED = "not tested"  # no cache path was compared (match alone)


@dataclass(frozen=True)
class Standing:
    """A server's settled reading and what it rules out, said once."""

    server: str
    kind: Kind  # EXACT or ONE
    limit: LimitKind
    limits: tuple[Limit, ...]
    next_command: Command | None = None  # a run large enough to state the limit (NOT_EXCLUDED)


@dataclass(frozen=True)
class Seen:
    """A server as the monitor last saw it: its last reading, the probe that read it, its
    verdict since (an error while it did not answer), and the settled kind already said."""

    reading: ServerProbe
    probe: int
    verdict: str
    said: Kind | None = None


Memory = Mapping[str, Seen]  # server URL -> what the monitor last saw of it

# Findings of condition 1 with no state bug found: one reading for the monitor (the limit
# statement tells them apart, once), so a noisy server's probes do not flip between them
_SETTLED_ONE = frozenset(
    {
        Finding.NOT_EXCLUDED,
        Finding.BATCH_VARIANCE,
        Finding.MATCH_PATH_ONLY,
        Finding.DETERMINISTIC_SHAPE,
        Finding.CACHE_NOT_TESTED,
    }
)


def _conditions(kind: Kind) -> set[str]:
    return set() if kind in (Kind.EXACT, Kind.UNKNOWN) else set(str(kind).split("+"))


def _replaced(seen: Seen, cur: ServerProbe) -> list[Change]:
    # a value one read lacks (None: not computed that time, e.g. the local weights' hash) is
    # no evidence of another process
    moved = {
        k: (a, b)
        for k, (a, b) in process_changes(seen.reading.identity, cur.identity).items()
        if a is not None and b is not None
    }
    if not moved:
        return []
    shown = tuple((k, shown_value(a), shown_value(b)) for k, (a, b) in moved.items())
    return [Change(cur.server, ChangeKind.REPLACED, "", "", since=seen.probe, settings=shown)]


def _reading(seen: Seen, cur: ServerProbe) -> list[Change]:
    """Conditions and finding, against the server's last reading."""
    prev, since = seen.reading, seen.probe
    if Kind.UNKNOWN in (prev.kind, cur.kind):
        # inconclusive clears nothing and shows nothing: only the finding changed
        if prev.finding != cur.finding:
            return [Change(cur.server, ChangeKind.FINDING, prev.finding, cur.finding, since=since)]
        return []
    out = []
    was, now = _conditions(prev.kind), _conditions(cur.kind)
    if now - was:
        two = "2" in now - was
        out.append(
            Change(
                cur.server,
                ChangeKind.APPEARED,
                prev.kind,
                cur.kind,
                cur.state_samples if two else (),
                cur.state_paths if two else (),
                since,
            )
        )
    if was - now:
        out.append(Change(cur.server, ChangeKind.CLEARED, prev.kind, cur.kind, since=since))
    same = prev.finding == cur.finding or {prev.finding, cur.finding} <= _SETTLED_ONE
    if was == now and not same:
        out.append(Change(cur.server, ChangeKind.FINDING, prev.finding, cur.finding, since=since))
    return out


def absent_verdict(after: ProbeReading) -> RunVerdict | None:
    """The verdict of a server a probe did not read: error (it did not answer), interrupted
    with the probe; None while the probe never ended."""
    if after.verdict is None:
        return None
    return RunVerdict.INTERRUPTED if after.verdict == "interrupted" else RunVerdict.ERROR


def changes(memory: Memory, after: ProbeReading) -> list[Change]:
    """What changed in `after`, per server, against the last reading of each (a server not
    read before has nothing to change from; one `after` did not read changes its verdict)."""
    out: list[Change] = []
    absent = absent_verdict(after)
    for url, gone in memory.items():
        if after.server(url) is None and absent is not None and absent != gone.verdict:
            out.append(Change(url, ChangeKind.VERDICT, gone.verdict, absent, since=gone.probe))
    for cur in after.servers:
        seen = memory.get(cur.server)
        if seen is None:
            continue
        out += _replaced(seen, cur)
        if seen.verdict != cur.verdict:
            out.append(
                Change(cur.server, ChangeKind.VERDICT, seen.verdict, cur.verdict, since=seen.probe)
            )
        out += _reading(seen, cur)
    return out


def _limit(s: ServerProbe) -> LimitKind:
    if not s.limits:
        return LimitKind.NOT_TESTED
    return LimitKind.EXCLUDED if all(lim.reached for lim in s.limits) else LimitKind.NOT_EXCLUDED


def standings(memory: Memory, after: ProbeReading) -> list[Standing]:
    """The settled readings (exact, condition 1) `after` reads that were not said yet for their
    server: the first reading, and the first after its conditions changed."""
    return [
        Standing(s.server, s.kind, _limit(s), s.limits, s.next_command)
        for s in after.servers
        if s.kind in (Kind.EXACT, Kind.ONE)
        and ((seen := memory.get(s.server)) is None or seen.said != s.kind)
    ]


def remember(memory: Memory, after: ProbeReading, probe: int) -> dict[str, Seen]:
    """The monitor's memory after probe number `probe` (`after`)."""
    out = dict(memory)
    for url, seen in memory.items():
        if after.server(url) is None and (now := absent_verdict(after)) is not None:
            out[url] = replace(seen, verdict=now)
    for s in after.servers:
        old = memory.get(s.server)
        settled = s.kind if s.kind in (Kind.EXACT, Kind.ONE) else None
        said = settled or (old.said if old and s.kind == Kind.UNKNOWN else None)
        out[s.server] = Seen(s, probe, s.verdict, said)
    return out
