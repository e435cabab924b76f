"""One probe of `kltui monitor`, read from its finished store: each server's diagnosis (the one
memoized `diagnose_server` every front end shares), its verdict, its identity and each helper's
figures, as data. What changed between probes is `probe_changes.py`'s. Nothing here decides
anything the diagnosis does not, with one exception said in `monitor_kind`: a probe's size
cannot exclude a state bug on a noisy server, and that reading settles as condition 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from kltui.engines.geometry import StateGeometry
from kltui.engines.identity import ServerIdentity
from kltui.metrics.summary import SummaryStatus
from kltui.readings.diagnosis import diagnose
from kltui.readings.diagnosis_parts import Command
from kltui.readings.findings import Basis, Finding, Kind
from kltui.readings.limit import Limit
from kltui.readings.path_test import STATE
from kltui.readings.verdict import Diagnosis
from kltui.session.events import RunVerdict
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
    gate: float | None = None  # the avg_kl_div threshold it was held to (check's gate)


@dataclass(frozen=True)
class ServerProbe:
    """One server's reading in a probe."""

    server: str
    model: str  # the model's name (ServerIdentity.model_name), never a filesystem path
    finding: Finding
    kind: Kind  # the conditions read broken (exact, 1, 2, 1+2, unknown): `monitor_kind`
    diagnosis: Diagnosis  # its words (words/diagnosis.label) as check prints them
    helpers: tuple[HelperFigures, ...]
    # the cache paths read as a state bug, and the samples the diagnosis names on them
    state_paths: tuple[str, ...] = ()
    state_samples: tuple[int, ...] = ()
    verdict: RunVerdict = RunVerdict.PASS  # this server's own
    identity: ServerIdentity = field(default_factory=ServerIdentity, compare=False)
    # what the reading rules out on each cache path (readings/limit.py), and the diagnosis's
    # command for a run large enough to say more
    limits: tuple[Limit, ...] = ()
    next_command: Command | None = None  # the diagnosis's next command (words render it)

    @property
    def geometry(self) -> StateGeometry:
        """The server's state geometry, as its identity recorded it (unknown when it did not)."""
        return StateGeometry.of(self.identity.get("geometry"))


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


def monitor_kind(d: Diagnosis) -> Kind:
    """The conditions a probe reads broken. The diagnosis's own kind, except "state bug not
    excluded" (match noisy, no cache path above it, too few samples to state a limit): a
    probe's size never states one on a noisy server, so that reading is condition 1, its
    limit said once (`probe_changes.Standing`), instead of "unknown" at every probe."""
    return Kind.ONE if d.finding is Finding.NOT_EXCLUDED else d.kind


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
        gate=s.threshold,
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


def _server_verdict(
    views: list[HelperView], fatal: bool, run: str | None, load: bool
) -> RunVerdict:
    """One server's verdict as `kltui check`'s on it alone: interrupted with the probe, error
    for a helper in error or a fatal problem on it, fail for a gate missed (or a state bug
    under --stress: `load`, the run's), else pass."""
    if run in (None, "interrupted"):
        return RunVerdict.INTERRUPTED
    said = RunVerdict.of([v.summary for v in views], fatal)
    return RunVerdict.FAIL if load and said == RunVerdict.PASS else said


def read_probe(
    store: SessionStore,
    errors: tuple[ProbeError, ...] = (),
    verdicts: Sequence[str | None] = (),
) -> ProbeReading:
    """The probe's reading from its finished store (`errors`: what the monitor saw go wrong
    around it: a timeout, a fault of kltui; `verdicts`: every run's, with --stress the quiet
    run's and "fail" for a state bug under load, the worst of them the probe's)."""
    found = list(errors)
    run = store.finished.verdict if store.finished else None
    worst = next((v for v in _WORST if v in verdicts), None)
    verdict = worst if worst is not None and run is not None else run
    load = worst == "fail" and run == "pass"  # --stress: the stressed run failed it
    fatal = {p.source for p in store.problems if p.fatal}
    servers = []
    for d in diagnose(store):
        views = [HelperView.of(st) for st in store.helpers.values() if st.server == d.server]
        state = tuple(p.helper for p in d.basis.tested if p.verdict == STATE)
        named = _state_samples(d.basis, [v for v in views if v.state.helper in state])
        identity = store.identity(d.server)
        servers.append(
            ServerProbe(
                server=d.server,
                model=identity.model_name,
                finding=d.finding,
                kind=monitor_kind(d),
                diagnosis=d,
                helpers=tuple(_figures(v) for v in views),
                state_paths=state,
                state_samples=named,
                verdict=_server_verdict(views, d.server in fatal, run, load),
                identity=identity,
                limits=d.limits,
                next_command=d.command,
            )
        )
        if (
            any(v.summary.status == SummaryStatus.ERROR for v in views)
            and ProbeError.HELPER not in found
        ):
            found.append(ProbeError.HELPER)
    for p in store.problems:
        if p.fatal:
            kind = ProbeError.UNREACHABLE if p.phase == "connect" else ProbeError.SERVER
            if kind not in found:
                found.append(kind)
    tokens = sum(h.tokens for s in servers for h in s.helpers)
    return ProbeReading(verdict, tuple(servers), tuple(found), tokens)
