"""Why kltui refuses `--server ROUTER`, in words: the golden refusal (`engines/router`) for one
worker and for several; the fleet's tests compare the refusal with `router_refusal`."""

from __future__ import annotations

from kltui.engines.router import RouterWorker, router_refusal

URL = "http://10.0.0.9:30000"
WHY = (
    "not a server: kltui runs no helper through a router because it broadcasts /flush_cache to "
    "every worker; it sends a helper's two paths (fresh prefill and decode) to different "
    "replicas, so k3 would mix replica differences into prefill vs decode; cache-hit probes land "
    f"on replicas that never saw the prefix. Check each worker directly with --router {URL} "
    "(fleet mode)"
)


def test_one_worker():
    assert router_refusal(URL, [RouterWorker("http://10.0.0.1:30000")]) == (
        f"{URL} is an SGLang router (GET /workers lists 1 worker), {WHY}"
    )


def test_two_workers():
    workers = [RouterWorker(f"http://10.0.0.{i}:30000") for i in (1, 2)]
    assert router_refusal(URL, workers) == (
        f"{URL} is an SGLang router (GET /workers lists 2 workers), {WHY}"
    )
