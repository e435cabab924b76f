"""`kltui monitor --prometheus`: each probe's reading as Prometheus metrics, served on `/metrics`
by prometheus_client (the official client, the `monitor` extra).

Names follow Prometheus' conventions: `kltui_` prefix, base units (`_seconds`), `_total` on
counters, `_info` on info metrics (value 1, the facts as labels, for joins), enum-style states
as prometheus_client's `Enum` (one series per state, 1 for the current one). Per-helper series
are labelled server, replica, model and helper; `replica` is the worker's URL under `--router`
(server: the router) and empty otherwise; `model` is the model's name, never a path. A series
whose server or helper was not read in the last probe is removed, so a stale value never looks
current; the first divergence position has no series while no token differs. Every counter's
series exists from the first scrape (at 0), so `increase()` sees the first event.
docs/MONITORING.md lists them; docs/monitoring/kltui-alerts.yml joins them.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kltui.errors import UsageError
from kltui.readings.probe import ProbeError, ServerProbe
from kltui.readings.probe_changes import ChangeKind, absent_verdict
from kltui.untrusted import one_line

if TYPE_CHECKING:
    from kltui.run.monitor import ProbeResult

CONDITIONS = ["exact", "1", "2", "1+2", "unknown"]
VERDICTS = ["none", "pass", "fail", "error", "interrupted"]  # none: no probe ended yet
HELPER_LABELS = ("server", "replica", "model", "helper")
SERVER_LABELS = ("server", "replica", "model")
INSTALL = "kltui monitor --prometheus needs prometheus_client: pip install 'kltui[monitor]'"
CONDITION_HELP = (
    "the conditions the last probe read broken: exact (none: bit-identical), 1 (condition 1 = "
    "batch-variant kernels), 2 (condition 2 = state bug), 1+2, unknown (inconclusive or not "
    "tested)"
)


def parse_listen(spec: str, public: bool) -> tuple[str, int]:
    """`PORT` or `HOST:PORT` -> (host, port); a host other than loopback needs `public`."""
    host, sep, port = spec.rpartition(":")
    host = host.strip("[]") if sep else "127.0.0.1"
    port = port if sep else spec
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--prometheus {spec!r}: give PORT or HOST:PORT (a port 1-65535)")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not public:
        raise UsageError(
            f"--prometheus {spec!r}: {host} is not a loopback address; add "
            "--prometheus-public to serve /metrics beyond this machine"
        )
    return host, int(port)


def _text(v: object) -> str:
    """A label value from a server's text (one line, cut; "" when unknown)."""
    return "" if v is None else one_line(v, 120)


def server_facts(s: ServerProbe) -> dict[str, str]:
    """`kltui_server_info`'s labels beyond server and replica: what the server said of itself
    and its state geometry (engines/geometry.py; "" where it said nothing)."""
    ident, geo = s.identity, s.geometry
    det = ident.enable_deterministic_inference
    mamba, window, experts = geo.mamba, geo.window, geo.experts
    track = mamba.track_interval if mamba else None
    chunk = mamba.chunk_size if mamba else None
    return {
        "model": s.model,
        "engine": _text(ident.engine_label),
        "version": _text(ident.version),
        "deterministic": "" if det is None else str(det).lower(),
        "attention_backend": _text(ident.attention_backend),
        "state": str(geo.kind) if geo.known else "",
        "track_interval": str(track.value) if track else "",
        "chunk": str(chunk.value) if chunk else "",
        "window": str(window.size.value) if window else "",
        "experts": str(experts.n_experts) if experts else "",
    }


class MonitorMetrics:
    """The monitor's metrics in their own registry (nothing of the process's default one)."""

    def __init__(
        self, router: str | None = None, every: float | None = None, servers: Sequence[str] = ()
    ) -> None:
        """`servers`: those probed (their verdict and change counters exist from the start)."""
        try:
            import prometheus_client as pc
        except ImportError:
            raise UsageError(INSTALL) from None
        # the `_created` twin of every counter is OpenMetrics' and noise in the text format a
        # scrape reads (the process is kltui's alone: the switch is global)
        pc.disable_created_metrics()
        self.registry = pc.CollectorRegistry()
        self.router = router
        # declared in this order, which is the order a scrape lists them in
        self._declare_helper_gauges(pc)
        self._declare_server_metrics(pc)
        self._declare_probe_metrics(pc, every)
        self._series: dict[Any, set[tuple[str, ...]]] = {}
        self._servers: set[tuple[str, str]] = set()
        for url in servers:
            self._new_server((url, ""))

    def _declare_helper_gauges(self, pc: Any) -> None:
        """Each helper's figures on each server: avg_kl_div, its gate, the tail, the largest
        k3, the first divergence, the samples."""
        reg = self.registry

        def per_helper(name: str, doc: str) -> Any:
            return pc.Gauge(name, doc, labelnames=HELPER_LABELS, registry=reg)

        self.avg_kl_div = per_helper(
            "kltui_avg_kl_div", "SGLang's avg_kl_div: mean over samples of each sample's mean k3"
        )
        self.gate = per_helper(
            "kltui_gate", "the avg_kl_div gate the helper is held to (kltui check's threshold)"
        )
        self.tail_fraction = per_helper(
            "kltui_tail_fraction", "share of tokens whose k3 is above the tail threshold"
        )
        self.max_k3 = per_helper("kltui_max_k3", "largest per-token k3 of the probe")
        self.first_divergence = per_helper(
            "kltui_first_divergence_position",
            "output position of the first token whose logprobs differ (no series: none differs)",
        )
        self.samples = per_helper("kltui_samples_tested", "samples scored by the helper")

    def _declare_server_metrics(self, pc: Any) -> None:
        """Each server's condition, verdict and what it said of itself; the kltui that probes."""
        reg = self.registry
        self.condition = pc.Enum(
            "kltui_condition", CONDITION_HELP, labelnames=SERVER_LABELS, states=CONDITIONS,
            registry=reg,
        )  # fmt: skip
        self.verdict = pc.Enum(
            "kltui_verdict",
            "the server's verdict in the last probe, as kltui check's on it (error: it did not "
            "answer)",
            labelnames=("server", "replica"),
            states=VERDICTS,
            registry=reg,
        )
        self.server_info = pc.Info(
            "kltui_server",
            "what the server said of itself: model name, engine, version, deterministic "
            "inference, attention backend and state geometry (state, track_interval, chunk, "
            "window, experts)",
            labelnames=("server", "replica"),
            registry=reg,
        )
        from kltui import __version__

        pc.Info("kltui_build", "the kltui that probes", registry=reg).info({"version": __version__})

    def _declare_probe_metrics(self, pc: Any, every: float | None) -> None:
        """The probes themselves: duration, requests, tokens, errors, the last good one, the
        reading's changes, the period."""
        reg = self.registry
        self.duration = pc.Gauge(
            "kltui_probe_duration_seconds", "wall time of the last probe", registry=reg
        )
        self.requests = pc.Counter(
            "kltui_probe_requests", "HTTP requests the probes' helpers sent", registry=reg
        )
        self.tokens = pc.Counter(
            "kltui_probe_tokens", "tokens the probes decoded and scored", registry=reg
        )
        self.probes = pc.Counter("kltui_probes", "probes run", registry=reg)
        self.errors = pc.Counter(
            "kltui_probe_errors", "probes with an error, by kind", ["kind"], registry=reg
        )
        for kind in ProbeError:  # every kind exported from the start, so rate() sees the first
            self.errors.labels(kind=str(kind))
        self.last_good = pc.Gauge(
            "kltui_last_good_probe_timestamp_seconds",
            "when the last probe that measured (pass or fail, no error) ended, Unix time (the "
            "monitor's start while none has)",
            registry=reg,
        )
        self.last_good.set(time.time())
        self.changes = pc.Counter(
            "kltui_reading_changes",
            "changes of a server's reading between probes: appeared, cleared (a condition; "
            "condition 2 = state bug), finding, verdict, replaced (another server process)",
            ["server", "replica", "change"],
            registry=reg,
        )
        self.interval = pc.Gauge(
            "kltui_probe_interval_seconds", "the probes' period (--every)", registry=reg
        )
        if every is not None:
            self.interval.set(every)

    def _new_server(self, base: tuple[str, str]) -> None:
        """A server's verdict and change counters, from its first sight (at 0)."""
        if base in self._servers:
            return
        self._servers.add(base)
        self.verdict.labels(*base).state("none")
        for kind in ChangeKind:
            self.changes.labels(*base, str(kind))

    def _labels(self, server: str, model: str) -> tuple[str, str, str]:
        if self.router:
            return self.router, server, model
        return server, "", model

    def _keep(self, metric: Any, current: set[tuple[str, ...]]) -> None:
        """Remove the series of `metric` the last probe did not set."""
        for labels in self._series.get(metric, set()) - current:
            metric.remove(*labels)
        self._series[metric] = current

    def probe_ended(self, r: ProbeResult) -> None:
        """One probe's reading into the metrics."""
        self.probes.inc()
        self.duration.set(r.seconds)
        self.requests.inc(r.requests)
        self.tokens.inc(r.reading.tokens)
        for e in r.reading.errors:
            self.errors.labels(kind=str(e)).inc()
        if r.reading.measured:
            self.last_good.set(r.started + r.seconds)
        seen: dict[Any, set[tuple[str, ...]]] = {m: set() for m in self._helper_metrics()}
        seen[self.condition] = set()
        read: set[tuple[str, str]] = set()
        for s in r.reading.servers:
            base = self._labels(s.server, s.model)
            self._new_server(base[:2])
            read.add(base[:2])
            self.verdict.labels(*base[:2]).state(s.verdict)
            self.server_info.labels(*base[:2]).info(server_facts(s))
            self.condition.labels(*base).state(str(s.kind))
            seen[self.condition].add(base)
            for h in s.helpers:
                labels = (*base, h.helper)
                values = {
                    self.avg_kl_div: h.avg_kl_div,
                    self.gate: h.gate,
                    self.tail_fraction: h.tail_fraction,
                    self.max_k3: h.max_k3,
                    self.samples: float(h.scored),
                    self.first_divergence: h.first_divergence[1] if h.first_divergence else None,
                }
                for metric, value in values.items():
                    if value is not None:
                        metric.labels(*labels).set(value)
                        seen[metric].add(labels)
        absent = absent_verdict(r.reading) or "interrupted"
        for base2 in self._servers - read:
            self.verdict.labels(*base2).state(absent)
        for metric, current in seen.items():
            self._keep(metric, current)
        for c in r.changes:
            self.changes.labels(*self._labels(c.server, "")[:2], str(c.kind)).inc()

    def _helper_metrics(self) -> tuple[Any, ...]:
        return (self.avg_kl_div, self.gate, self.tail_fraction, self.max_k3, self.samples,
                self.first_divergence)  # fmt: skip

    def exposition(self) -> bytes:
        """The text format of /metrics, as a scrape gets it."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)

    def serve(self, host: str, port: int) -> Any:
        """Serve /metrics on host:port (a thread); the server object, to `shutdown()`."""
        from prometheus_client import start_http_server

        try:
            server, _thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as e:
            raise UsageError(f"--prometheus {host}:{port}: cannot listen ({e.strerror})") from None
        return server


__all__ = ["CONDITIONS", "MonitorMetrics", "VERDICTS", "parse_listen", "server_facts"]
