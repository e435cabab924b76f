"""A test-only stand-in for a vLLM baseline, on 127.0.0.1 and a free port: enough of vLLM's
OpenAI-compatible API for cross_engine (`/health`, `/version`, `/v1/models`, `/metrics` with
`vllm:cache_config_info`, `/v1/completions` on token-id prompts with `prompt_logprobs` and
`logprobs`), with a deterministic "model" (a function of the position and the token before it),
so that it agrees with itself bit for bit in any batch.

`stale=True` plants vLLM bug #42019: a prompt-logprob request whose leading KV blocks were seen
before (a prefix-cache hit) leaves those positions' logprobs unwritten, so they hold the previous
request's values. This is NOT vLLM: it stands in for one to test kltui's refusal.

For the floors' scheduling tests: `greedy_delay` holds every generating request (max_tokens > 1)
that many seconds, and `fail_floors` answers 400 to a one-prompt prompt-logprob request once a
batched one was seen (cross_engine's floors; the contract probe's requests come before).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VOCAB = 400
BLOCK = 16


def top_ids(prev: int, pos: int, k: int) -> list[int]:
    """The model's K most likely next tokens after `prev` at `pos`, best first."""
    h = (prev * 7919 + pos * 104729) % VOCAB
    return [(h + 37 * j) % VOCAB for j in range(k)]


def top_lps(k: int) -> list[float]:
    return [-0.1] + [-3.0 - j for j in range(1, k)]


def logprob(prev: int, pos: int, tok: int) -> float:
    """The logprob of `tok` at `pos` (a distribution: the top-K sum below 1)."""
    tops = top_ids(prev, pos, 20)
    if tok in tops:
        return top_lps(20)[tops.index(tok)]
    return -12.0 - (tok % 7) / 10


class StaleVLLM:
    """The stand-in server (a thread); `url` once started; use as a context manager."""

    def __init__(
        self,
        model_path: str,
        *,
        stale: bool,
        version: str = "0.27.0",
        greedy_delay: float = 0.0,
        fail_floors: bool = False,
    ) -> None:
        self.model_path = model_path
        self.stale = stale
        self.version = version
        self.greedy_delay = greedy_delay
        self.fail_floors = fail_floors
        self.batched = False  # a prompt-logprob request of several prompts was seen
        self.seen: set[tuple[int, ...]] = set()
        self.last: list[float] = []  # the previous request's prompt logprobs (the stale buffer)
        self.lock = threading.Lock()
        self.requests = 0
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> StaleVLLM:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a) -> None:
                pass

            def _send(self, status: int, body: bytes, ctype="application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path == "/health":
                    self._send(200, b"")
                elif path == "/version":
                    self._send(200, json.dumps({"version": owner.version}).encode())
                elif path == "/v1/models":
                    card = {"id": owner.model_path, "object": "model", "root": owner.model_path,
                            "max_model_len": 4096}  # fmt: skip
                    self._send(200, json.dumps({"object": "list", "data": [card]}).encode())
                elif path == "/metrics":
                    gauge = (
                        'vllm:cache_config_info{block_size="16",cache_dtype="auto",'
                        'enable_prefix_caching="True"} 1.0\n'
                    )
                    self._send(200, gauge.encode(), "text/plain")
                else:
                    self._send(404, b'{"detail":"Not Found"}')

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path != "/v1/completions":
                    self._send(404, b'{"detail":"Not Found"}')
                    return
                scoring = body.get("prompt_logprobs") is not None
                if scoring and len(body["prompt"]) > 1:
                    owner.batched = True
                elif scoring and owner.fail_floors and owner.batched:
                    self._send(400, b'{"error":{"message":"stand-in: floors refused"}}')
                    return
                if int(body.get("max_tokens") or 1) > 1 and owner.greedy_delay:
                    time.sleep(owner.greedy_delay)
                choices = [owner.complete(i, p, body) for i, p in enumerate(body["prompt"])]
                self._send(200, json.dumps({"choices": choices}).encode())

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def _cached(self, ids: list[int]) -> int:
        """The leading tokens whose blocks an earlier request held (vLLM's block hashes)."""
        n = 0
        while n + BLOCK <= len(ids) and tuple(ids[: n + BLOCK]) in self.seen:
            n += BLOCK
        for m in range(BLOCK, len(ids) + 1, BLOCK):
            self.seen.add(tuple(ids[:m]))
        return n

    def complete(self, index: int, ids: list[int], body: dict) -> dict:
        with self.lock:
            self.requests += 1
            cached = self._cached(ids)
            lps = [logprob(ids[j - 1], j, ids[j]) for j in range(1, len(ids))]
            if self.stale:
                # bug #42019: cached positions are left unwritten: the last request's values
                for j in range(1, min(cached, len(ids))):
                    lps[j - 1] = self.last[j - 1] if j - 1 < len(self.last) else -1.0
            self.last = lps
        choice: dict = {"index": index, "text": "", "finish_reason": "length",
                        "prompt_token_ids": ids}  # fmt: skip
        k = body.get("prompt_logprobs")
        if k is not None:
            rows: list = [None]
            for j in range(1, len(ids)):
                tops = top_ids(ids[j - 1], j, k)
                row = {str(t): {"logprob": lp, "rank": r + 1, "decoded_token": None}
                       for r, (t, lp) in enumerate(zip(tops, top_lps(k), strict=True))}  # fmt: skip
                rank = tops.index(ids[j]) + 1 if ids[j] in tops else k + 1 + ids[j] % 5
                row[str(ids[j])] = {"logprob": lps[j - 1], "rank": rank, "decoded_token": None}
                rows.append(row)
            choice["prompt_logprobs"] = rows
        out, seq = [], list(ids)
        for _ in range(int(body.get("max_tokens") or 1)):
            t = top_ids(seq[-1], len(seq), 1)[0]
            out.append(t)
            seq.append(t)
        choice["token_ids"] = out
        kk = body.get("logprobs")
        if kk is not None:
            pos = range(len(ids), len(ids) + len(out))
            choice["logprobs"] = {
                "tokens": [f"token_id:{t}" for t in out],
                "token_logprobs": [top_lps(1)[0] for _ in out],
                "top_logprobs": [
                    {
                        f"token_id:{t}": lp
                        for t, lp in zip(
                            top_ids(seq[p - 1], p, max(kk, 1)), top_lps(max(kk, 1)), strict=True
                        )
                    }
                    for p in pos
                ],  # fmt: skip
                "text_offset": [0] * len(out),
            }
        return choice
