"""SGLang's router (`sglang-router`, the SGLang Model Gateway): what its worker list says.

The router answers `GET /workers` with `{"workers": [{url, worker_type, is_healthy, metadata,
model_id, ...}], "total", "stats"}`; an SGLang server has no such route (HTTP 404). That list is
how kltui tells a router from a server, and it is the fleet a `--router` run checks worker by
worker. Every string in it came from the router: it is made inert here, once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kltui.engines.errors import MalformedJSON, RouteNotFound
from kltui.engines.http import HttpEngine, is_transient, with_backoff
from kltui.engines.identity import EngineName
from kltui.untrusted import sanitize

# SGLang's router types: "regular" serves whole requests; "prefill" and "decode" are the two
# halves of a prefill/decode-disaggregated pair (the KV cache moves between them).
REGULAR = "regular"
PD_TYPES = ("prefill", "decode")
WORKERS_ROUTE = "/workers"

# Why kltui measures nothing through a router: each is a way its numbers would be wrong.
ROUTER_REASONS = (
    "it broadcasts /flush_cache to every worker",
    "it sends a helper's two paths (fresh prefill and decode) to different replicas, so k3 "
    "would mix replica differences into prefill vs decode",
    "cache-hit probes land on replicas that never saw the prefix",
)

PD_NOTE = (
    "prefill/decode-disaggregated: a request sent to this worker alone cannot complete (its KV "
    "cache moves to or from its pair through the bootstrap server), so no helper runs on it; "
    "kltui checks regular workers only"
)


@dataclass(frozen=True)
class RouterWorker:
    """One worker as the router lists it."""

    url: str
    worker_type: str = REGULAR
    is_healthy: bool | None = None
    model_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def disaggregated(self) -> bool:
        """A prefill or decode half of a PD pair (helpers cannot run on it alone)."""
        return self.worker_type.split("_")[0] in PD_TYPES

    def to_record(self) -> dict[str, Any]:
        """What a recording keeps of this worker."""
        return {
            "url": self.url,
            "worker_type": self.worker_type,
            "is_healthy": self.is_healthy,
            "model_id": self.model_id,
            "metadata": dict(self.metadata),
        }


def parse_workers(doc: Any, redact=None) -> list[RouterWorker] | None:
    """The workers of a `GET /workers` answer; None when it is not a router's worker list."""
    if not isinstance(doc, dict) or not isinstance(doc.get("workers"), list):
        return None
    out = []
    for w in doc["workers"]:
        if not isinstance(w, dict) or not isinstance(w.get("url"), str):
            return None
        w = sanitize(w, redact)
        healthy = w.get("is_healthy")
        meta = w.get("metadata")
        model = w.get("model_id")
        out.append(
            RouterWorker(
                url=w["url"].rstrip("/"),
                worker_type=str(w.get("worker_type") or REGULAR),
                is_healthy=healthy if isinstance(healthy, bool) else None,
                model_id=model if isinstance(model, str) else None,
                metadata=meta if isinstance(meta, dict) else {},
            )
        )
    return out


class RouterClient(HttpEngine):
    """The few routes kltui reads from SGLang's router: its worker list."""

    engine = EngineName.ROUTER
    product = "an SGLang router"
    attempts = 3

    async def workers_once(self) -> list[RouterWorker] | None:
        """The router's workers; None when this URL answers no worker list (a server)."""
        try:
            doc = await self.request_json("GET", WORKERS_ROUTE, max_bytes=16 * 2**20)
        except (RouteNotFound, MalformedJSON):
            return None
        return parse_workers(doc, self.redact)

    async def workers(self) -> list[RouterWorker] | None:
        """`workers_once`, retried while the router is briefly unreachable or overloaded."""
        return await with_backoff(
            self.workers_once,
            attempts=self.attempts,
            base_delay=self.retry_base_delay,
            retry_if=is_transient,
        )


def router_refusal(url: str, workers: list[RouterWorker]) -> str:
    """The one-line reason `--server ROUTER` is refused."""
    n = len(workers)
    return (
        f"{url} is an SGLang router (GET {WORKERS_ROUTE} lists {n} worker{'s' * (n != 1)}), "
        "not a server: kltui runs no helper through a router because "
        + "; ".join(ROUTER_REASONS)
        + f". Check each worker directly with --router {url} (fleet mode)"
    )


async def probe_router(
    url: str, api_key: str | None, timeout: float = 30.0
) -> list[RouterWorker] | None:
    """The worker list when `url` is a router, None when it is not."""
    async with RouterClient(url, api_key, timeout=timeout) as client:
        return await client.workers()
