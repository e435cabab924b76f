"""`kltui monitor --prometheus`: each probe's reading as Prometheus metrics, served on `/metrics`
by prometheus_client (the official client, the `monitor` extra).

Names follow Prometheus' conventions: `kltui_` prefix, base units (`_seconds`), `_total` on
counters, enum-style states as prometheus_client's `Enum` (one series per state, 1 for the
current one). Per-helper series are labelled server, replica, model and helper; `replica` is the
worker's URL under `--router` (server: the router) and empty otherwise. A series whose server or
helper was not read in the last probe is removed, so a stale value never looks current; the
first divergence position has no series while no token differs. docs/MONITORING.md lists them
with example alert rules.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from kltui.errors import UsageError
from kltui.readings.probe import ProbeError

if TYPE_CHECKING:
    from kltui.run.monitor import ProbeResult

CONDITIONS = ["exact", "1", "2", "1+2", "unknown"]
VERDICTS = ["none", "pass", "fail", "error", "interrupted"]  # none: no probe ended yet
HELPER_LABELS = ("server", "replica", "model", "helper")
SERVER_LABELS = ("server", "replica", "model")
INSTALL = "kltui monitor --prometheus needs prometheus_client: pip install 'kltui[monitor]'"


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


class MonitorMetrics:
    """The monitor's metrics in their own registry (nothing of the process's default one)."""

    def __init__(self, router: str | None = None, every: float | None = None) -> None:
        try:
            import prometheus_client as pc
        except ImportError:
            raise UsageError(INSTALL) from None
        # the `_created` twin of every counter is OpenMetrics' and noise in the text format a
        # scrape reads (the process is kltui's alone: the switch is global)
        pc.disable_created_metrics()
        self.registry = reg = pc.CollectorRegistry()
        self.router = router

        def per_helper(name: str, doc: str) -> Any:
            return pc.Gauge(name, doc, labelnames=HELPER_LABELS, registry=reg)

        self.avg_kl_div = per_helper(
            "kltui_avg_kl_div", "SGLang's avg_kl_div: mean over samples of each sample's mean k3"
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
        self.condition = pc.Enum(
            "kltui_condition",
            "the diagnosis: exact (conditions 1 and 2 hold), 1 (batch variance), 2 (state bug), "
            "1+2, unknown (inconclusive or not tested)",
            labelnames=SERVER_LABELS,
            states=CONDITIONS,
            registry=reg,
        )
        self.verdict = pc.Enum(
            "kltui_verdict", "the last probe's verdict, as kltui check's", states=VERDICTS,
            registry=reg,
        )  # fmt: skip
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
            "when the last probe that measured (pass or fail, no error) ended, Unix time",
            registry=reg,
        )
        self.changes = pc.Counter(
            "kltui_reading_changes",
            "changes of reading between probes (appeared, cleared, finding, verdict)",
            ["server", "change"],
            registry=reg,
        )
        self.interval = pc.Gauge(
            "kltui_probe_interval_seconds", "the probes' period (--every)", registry=reg
        )
        if every is not None:
            self.interval.set(every)
        self._series: dict[Any, set[tuple[str, ...]]] = {}

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
        self.verdict.state(r.reading.verdict or "none")
        for e in r.reading.errors:
            self.errors.labels(kind=str(e)).inc()
        if r.reading.measured:
            self.last_good.set(r.started + r.seconds)
        seen: dict[Any, set[tuple[str, ...]]] = {m: set() for m in self._helper_metrics()}
        seen[self.condition] = set()
        for s in r.reading.servers:
            base = self._labels(s.server, s.model)
            self.condition.labels(*base).state(str(s.kind))
            seen[self.condition].add(base)
            for h in s.helpers:
                labels = (*base, h.helper)
                values = {
                    self.avg_kl_div: h.avg_kl_div,
                    self.tail_fraction: h.tail_fraction,
                    self.max_k3: h.max_k3,
                    self.samples: float(h.scored),
                    self.first_divergence: h.first_divergence[1] if h.first_divergence else None,
                }
                for metric, value in values.items():
                    if value is not None:
                        metric.labels(*labels).set(value)
                        seen[metric].add(labels)
        for metric, current in seen.items():
            self._keep(metric, current)
        for c in r.changes:
            self.changes.labels(server=c.server, change=str(c.kind)).inc()

    def _helper_metrics(self) -> tuple[Any, ...]:
        return (self.avg_kl_div, self.tail_fraction, self.max_k3, self.samples,
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


__all__ = ["CONDITIONS", "MonitorMetrics", "VERDICTS", "parse_listen"]
