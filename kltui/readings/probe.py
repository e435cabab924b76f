"""One probe of `kltui monitor`, read from its finished store: each server's diagnosis (the one
memoized `diagnose_server` every front end shares) and each helper's figures, as data; and what
changed between two probes. Nothing here decides anything the diagnosis does not: a change is
two readings compared, kind by kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from kltui.readings.diagnosis import Diagnosis, diagnose
from kltui.readings.findings import Basis, Finding, Kind
from kltui.readings.path_test import STATE
from kltui.session.helper_view import HelperView
from kltui.session.store import SessionStore


class ProbeError(StrEnum):
    """Why a probe measured nothing (or not everything): the label of
    `kltui_probe_errors_total`."""

    UNREACHABLE = "unreachable"  # no server answered
    HELPER = "helper"  # a helper ended in error (the server answered, the helper broke)
    SERVER = "server"  # a fatal problem on a server mid-run (died, reset, protocol)
    TIMEOUT = "timeout"  # the probe ran past --probe-timeout and was cut short
    INTERNAL = "internal"  # a fault of kltui or of an input file


class ChangeKind(StrEnum):
    """What differs between two probes of one server."""

    APPEARED = "appeared"  # a condition broken now that was not before (2 after 0, 1+2 after 1)
    CLEARED = "cleared"  # a condition broken before that is not now
    FINDING = "finding"  # the same conditions, another finding (e.g. exact -> stray ulps)
    VERDICT = "verdict"  # the probe's verdict (pass, fail, error) changed


@dataclass(frozen=True)
class HelperFigures:
    """One helper's figures in a probe (what `/metrics` exports per helper)."""

    helper: str
    status: str  # pass | fail | vacuous | invalid | error | "" (never finished)
    avg_kl_div: float | None
    tail_fraction: float | None
    max_k3: float | None
    first_divergence: tuple[int, int] | None  # (sample, position); None: no token differs
    scored: int
    samples: int
    tokens: int


@dataclass(frozen=True)
class ServerProbe:
    """One server's reading in a probe."""

    server: str
    model: str
    finding: Finding
    kind: Kind  # the conditions shown broken (exact, 1, 2, 1+2, unknown)
    diagnosis: Diagnosis  # its words (words/diagnosis.label) as check prints them
    helpers: tuple[HelperFigures, ...]
    # the cache paths read as a state bug, and the samples the diagnosis names on them
    state_paths: tuple[str, ...] = ()
    state_samples: tuple[int, ...] = ()


@dataclass(frozen=True)
class ProbeReading:
    """What one probe measured, per server, and how it ended."""

    verdict: str | None  # pass | fail | error | interrupted (None: never finished)
    servers: tuple[ServerProbe, ...]
    errors: tuple[ProbeError, ...] = ()
    tokens: int = 0  # tokens decoded and scored by every helper

    @property
    def measured(self) -> bool:
        """A good probe: it ended with a verdict on what it measured (pass or fail)."""
        return self.verdict in ("pass", "fail") and not self.errors

    def server(self, url: str) -> ServerProbe | None:
        """One server's reading (None: it was not read in this probe)."""
        return next((s for s in self.servers if s.server == url), None)


@dataclass(frozen=True)
class Change:
    """A reading that changed between two probes of one server."""

    server: str
    kind: ChangeKind
    before: str  # the earlier reading (a Kind, a finding or a verdict)
    after: str
    # the samples named on the state-bug paths (APPEARED of condition 2), the first to differ
    # first
    samples: tuple[int, ...] = ()
    paths: tuple[str, ...] = ()


def _figures(v: HelperView) -> HelperFigures:
    s = v.summary
    first = s.first_divergence or {}
    at = (first.get("sample"), first.get("position"))
    return HelperFigures(
        helper=v.state.helper,
        status=s.status or "",
        avg_kl_div=s.avg_kl_div,
        tail_fraction=s.tail_fraction,
        max_k3=s.max_k3,
        first_divergence=(int(at[0]), int(at[1])) if None not in at else None,  # type: ignore[arg-type]
        scored=v.scored,
        samples=v.samples,
        tokens=s.tokens or 0,
    )


def _state_samples(basis: Basis, views: list[HelperView]) -> tuple[int, ...]:
    """The samples a state bug shows on: those the diagnosis names far above match, else every
    sample that differs on a state-bug path (match exact: any difference is the path's); the
    sample where the first such path first differed leads."""
    named = {i for p in basis.tested if p.verdict == STATE for i in p.affected}
    if not named:
        named = {
            int(e["index"])
            for v in views
            for e in v.summary.per_sample
            if e.get("first_divergence") is not None
        }
    first = next((f.first_divergence[0] for f in map(_figures, views) if f.first_divergence), None)
    lead = (first,) if first in named else ()
    return lead + tuple(sorted(named - {first}))


_WORST = ("error", "interrupted", "fail", "pass")


def read_probe(
    store: SessionStore,
    errors: tuple[ProbeError, ...] = (),
    verdicts: Sequence[str | None] = (),
) -> ProbeReading:
    """The probe's reading from its finished store (`errors`: what the monitor saw go wrong
    around it: a timeout, a fault of kltui; `verdicts`: every run's, with --stress the quiet
    run's and "fail" for a state bug under load, the worst of them the probe's)."""
    found = list(errors)
    servers = []
    for d in diagnose(store):
        views = [HelperView.of(st) for st in store.helpers.values() if st.server == d.server]
        state = tuple(p.helper for p in d.basis.tested if p.verdict == STATE)
        named = _state_samples(d.basis, [v for v in views if v.state.helper in state])
        servers.append(
            ServerProbe(
                server=d.server,
                model=store.identity(d.server).model_path or "",
                finding=d.finding,
                kind=d.kind,
                diagnosis=d,
                helpers=tuple(_figures(v) for v in views),
                state_paths=state,
                state_samples=named,
            )
        )
        if any(v.summary.status == "error" for v in views) and ProbeError.HELPER not in found:
            found.append(ProbeError.HELPER)
    for p in store.problems:
        if p.fatal:
            kind = ProbeError.UNREACHABLE if p.phase == "connect" else ProbeError.SERVER
            if kind not in found:
                found.append(kind)
    verdict = store.finished.verdict if store.finished else None
    worst = [v for v in _WORST if v in verdicts]
    if worst and verdict is not None:
        verdict = worst[0]
    tokens = sum(h.tokens for s in servers for h in s.helpers)
    return ProbeReading(verdict, tuple(servers), tuple(found), tokens)


def _conditions(kind: Kind) -> set[str]:
    return set() if kind in (Kind.EXACT, Kind.UNKNOWN) else set(str(kind).split("+"))


def changes(before: ProbeReading, after: ProbeReading) -> list[Change]:
    """What changed from one probe to the next, per server read in both (a server missing
    from one of them is a probe error, counted as such, not a change of reading)."""
    out: list[Change] = []
    if before.verdict != after.verdict and before.verdict and after.verdict:
        out.append(Change("", ChangeKind.VERDICT, before.verdict, after.verdict))
    for cur in after.servers:
        prev = before.server(cur.server)
        if prev is None:
            continue
        if Kind.UNKNOWN in (prev.kind, cur.kind):
            # inconclusive clears nothing and shows nothing: only the finding changed
            if prev.finding != cur.finding:
                out.append(
                    Change(cur.server, ChangeKind.FINDING, str(prev.finding), str(cur.finding))
                )
            continue
        was, now = _conditions(prev.kind), _conditions(cur.kind)
        if now - was:
            two = "2" in now - was
            out.append(
                Change(
                    cur.server,
                    ChangeKind.APPEARED,
                    str(prev.kind),
                    str(cur.kind),
                    cur.state_samples if two else (),
                    cur.state_paths if two else (),
                )
            )
        if was - now:
            out.append(Change(cur.server, ChangeKind.CLEARED, str(prev.kind), str(cur.kind)))
        if was == now and prev.finding != cur.finding:
            out.append(Change(cur.server, ChangeKind.FINDING, str(prev.finding), str(cur.finding)))
    return out
