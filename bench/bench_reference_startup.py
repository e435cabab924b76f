#!/usr/bin/env python
"""Time from launching the reference server to its ready line (target: < 3 s on two cores).

    python bench/bench_reference_startup.py [--runs 5] [--deterministic]

Each run starts `python -m kltui.reference serve --port 0` through ReferenceServer, waits for
"kltui reference server ready at ...", sends one /generate to prove it serves, and stops it.
The load average is printed too: on a shared machine it moves the numbers more than the code does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from kltui.reference.launcher import ReferenceServer  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--deterministic", action="store_true")
    args = ap.parse_args()

    ready, first = [], []
    for _ in range(args.runs):
        with ReferenceServer(deterministic=args.deterministic) as srv:
            ready.append(srv.startup_seconds)
            t0 = time.perf_counter()
            r = httpx.post(
                srv.url + "/generate",
                json={
                    "text": "The kitchen was quiet",
                    "sampling_params": {"max_new_tokens": 8},
                },
                timeout=30,
            )
            r.raise_for_status()
            first.append(time.perf_counter() - t0)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"reference server startup (launch -> ready line), {args.runs} runs, "
        f"{os.cpu_count()} CPUs, load average {load:.2f}"
    )
    print(
        f"  min {min(ready):.2f} s   median {statistics.median(ready):.2f} s   "
        f"max {max(ready):.2f} s"
    )
    print(f"  first /generate (8 tokens) median {statistics.median(first) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
