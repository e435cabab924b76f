"""A loopback proxy in front of a real server that answers /flush_cache 200 without flushing:
what a proxy or a server that ignores the flush looks like to kltui (issue 28). Everything else
is forwarded as it is, buffered."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx


class FlushlessProxy:
    """`with FlushlessProxy(upstream) as url:` a proxy on 127.0.0.1 and a free port."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.swallowed = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet test output
                pass

            def _forward(self, method: str) -> None:
                if self.path.startswith("/flush_cache"):
                    proxy.swallowed += 1
                    self._reply(200, b"Cache flushed.\n", "text/plain")
                    return
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                r = httpx.request(
                    method,
                    proxy.upstream + self.path,
                    content=body,
                    headers={"Content-Type": self.headers.get("Content-Type", "application/json")},
                    timeout=120,
                )
                self._reply(r.status_code, r.content, r.headers.get("content-type", ""))

            def _reply(self, status: int, body: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._forward("GET")

            def do_POST(self) -> None:
                self._forward("POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> str:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self.url

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
