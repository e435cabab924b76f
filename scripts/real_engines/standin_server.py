#!/usr/bin/env python3
"""A stand-in for a real engine's process tree, to test how servers are started and stopped
(`real_engines.sh start standin`), not any engine behaviour.

Shaped like SGLang (HTTP server + scheduler + detokenizer) and vLLM (API server + engine core +
worker): the main process answers GET /health on --host/--port and spawns two workers; one of them
spawns a worker of its own (a grandchild) and ignores SIGTERM, as a busy worker may. No worker
watches its parent, so only the launcher's process-group handling can end them. All of them sleep:
no CPU is used.
"""

from __future__ import annotations

import argparse
import http.server
import subprocess
import sys

SLEEPER = "import time\nwhile True: time.sleep(3600)"
STUBBORN = (
    "import signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    f"subprocess.Popen([sys.executable, '-c', {SLEEPER!r}])\n"
    "while True: time.sleep(3600)"
)


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        code = 200 if self.path == "/health" else 404
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    args, _unknown = p.parse_known_args()
    for code in (SLEEPER, STUBBORN):
        subprocess.Popen([sys.executable, "-c", code])
    http.server.HTTPServer((args.host, args.port), Health).serve_forever()


if __name__ == "__main__":
    main()
