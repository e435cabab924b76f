#!/usr/bin/env python
"""Time from starting `kltui check` to its first request at the server, against a bare client.

    python bench/bench_check_start.py [--runs 7] [--kltui-args "--helpers match"]

What a CI gate or a monitor probe pays on every call before anything is measured (issue 59):
the process start and the imports. A stub server on 127.0.0.1 (this process, stdlib) notes when
each process's first HTTP request arrives and answers 503, so kltui stops there (exit 3). The
bare client is a fresh Python process that imports httpx and sends one POST, as a script
around SGLang's helpers would (without SGLang's own imports). Runs alternate; medians are
printed with the load average, which on a shared machine moves the numbers more than the code.
The checkout's kltui is byte-compiled first, as installing it does (`--source`: not, for the
cost of compiling every module at every start where Python writes no bytecode, e.g. with
PYTHONDONTWRITEBYTECODE, set on the project's machine; httpx is always compiled, installed).
The whole run against a real server, kltui's process against SGLang's three helpers:
`bench/bench_gate.py --variants "kltui check (whole process)"` (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BARE = "import httpx, sys; httpx.post(sys.argv[1] + '/generate', json={'input_ids': [[1]]})"


def compile_checkout(source: bool = False) -> str:
    """Byte-compile the checkout's kltui (into its ignored __pycache__ folders), as installing
    it does, unless `source`; says which it measures."""
    if source:
        return "kltui from source (compiled at every start where no bytecode is written)"
    cmd = [sys.executable, "-m", "compileall", "-q", str(ROOT / "kltui")]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return "kltui byte-compiled (as installed)"


class Stub(BaseHTTPRequestHandler):
    """Notes the first request's arrival, then answers 503 to everything."""

    first: float | None = None

    def _answer(self) -> None:
        if Stub.first is None:
            Stub.first = time.perf_counter()
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:  # quiet
        pass


def first_request(argv: list[str]) -> float:
    """Seconds from starting `argv` to its first request at the stub."""
    Stub.first = None
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, timeout=120)
    if Stub.first is None:
        raise SystemExit(f"no request from {argv[:4]}: {proc.stderr.decode()[-400:]}")
    return Stub.first - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--kltui-args", default="", help="more `kltui check` arguments")
    ap.add_argument("--source", action="store_true", help="do not byte-compile kltui first")
    args = ap.parse_args()
    built = compile_checkout(args.source)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    kltui = [sys.executable, "-m", "kltui", "check", "--server", url, "--no-record"]
    kltui += shlex.split(args.kltui_args)
    bare = [sys.executable, "-c", BARE, url]
    times: dict[str, list[float]] = {"kltui check": [], "bare httpx client": []}
    try:
        for i in range(args.runs):
            order = [("kltui check", kltui), ("bare httpx client", bare)]
            for name, argv in order if i % 2 == 0 else order[::-1]:
                times[name].append(first_request(argv))
    finally:
        server.shutdown()
    print(f"load average {os.getloadavg()[0]:.1f}; {args.runs} runs each, medians; {built}")
    base = statistics.median(times["bare httpx client"])
    for name, xs in times.items():
        m = statistics.median(xs)
        spread = f"{min(xs):.3f}-{max(xs):.3f}"
        print(f"{name:18s} first request after {m:.3f} s ({spread}); +{m - base:.3f} s over bare")
    return 0


if __name__ == "__main__":
    sys.exit(main())
