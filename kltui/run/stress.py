"""`--stress LEVEL`: bounded background traffic at a server while its helpers run (issue 32).

Many state bugs need load: an eviction under memory pressure, a retraction, a chunked prefill at
its boundary, a prefix restored while other requests write the pool. While the helpers of a
stressed run measure, `Traffic` sends requests of its own at the same server:
- `shared`: a helper prompt's first half and other ids, with prompt logprobs (another request's
  prompt logprobs on a shared prefix);
- `reuse`: a helper prompt exactly, decoding a few tokens (a radix hit on the helper's prefix);
  sent again later, a hit shorter than before is an eviction observed;
- `long`: other ids sized to fill the KV pool (radix eviction) and cross the chunked-prefill
  budget (a chunk boundary); two more are queued just ahead of each scoring prefill;
- `abort`: a streamed decode closed after its first chunk (an abort mid-decode);
- `stream`: a streamed decode read to its end;
- `squeeze` (prefill_cache_hit only): its warm runs with the traffic paused, so the pool then
  holds the warmed prompts alone; just before its hits, ids of no helper prompt, one request
  after another, fill the pool's free space plus a seeded 25-75 % of what it holds, so the
  radix cache evicts part of the helper's prefixes and stops among them: the hits then
  restore prefixes right after an eviction under pressure. The traffic resumes just after the
  hits are sent. A pool that needs more than the level's `squeeze_max` tokens is not
  squeezed (the tick says so).
`concurrency` of them run at once; the heavy level goes above the server's
max_running_requests, so the scheduler queues, and retracts where memory runs short.

Bounded: at most `requests` requests and `seconds` of sending, then the helpers go on quiet (the
counts say when it stopped). Flushes: a helper flushes between phases and SGLang refuses to
flush a busy server, so traffic pauses (its requests aborted) when a helper enters `flush` and
resumes, primed with requests in flight, when the next phase starts. Counted: every request by
kind, completions, aborts, errors, evictions observed, and the server's own retraction and
eviction counters from /metrics where it serves them (SGLang with --enable-metrics). Each count
goes into the stream as a cumulative `StressTick` at every phase of the helpers, so a reading
can say what the traffic did during the phase where a sample diverged (`run/under_load.py`
runs the traffic around a helper stream's phases).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np

from kltui.run.stress_levels import StressLevel
from kltui.session.events import StressTick

KINDS = ("shared", "reuse", "long", "abort", "stream")
RESUME_AFTER_SQUEEZE_S = 0.5  # the helper's hit requests go first
PRIME_S = 2.0  # at most this long to get the first requests of a phase in flight
METRICS_TIMEOUT_S = 5.0
STOP_S = 10.0  # at most this long for the workers to end
# after each of the two long prompts queued ahead of a scoring prefill: the first is in its
# prefill step when the second and the helper's request arrive
PRIME_GAPS_S = (0.3, 0.05)


def read_metrics(text: str) -> dict[str, float]:
    """The counters a stressed run reports, from Prometheus text: retractions (SGLang names
    its counter sglang:num_retracted_requests_total, older ones ..._reqs_total; like SGLang's
    own cache consistency test, any `*retracted_req*_total` counts) and evicted tokens
    (sglang:evicted_tokens_total)."""
    # a labelled Prometheus counter is absent from the page until its first increment (real
    # SGLang 0.5.23 on CPU listed no retraction counter before any retraction): served and
    # absent reads as 0
    out: dict[str, float] = {"retractions": 0.0, "evicted_tokens": 0.0}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.partition("{") if "{" in line else line.partition(" ")
        value = rest.rsplit(" ", 1)[-1] if rest else ""
        try:
            v = float(value)
        except ValueError:
            continue
        if "retracted_req" in name and name.endswith("_total"):
            out["retractions"] += v
        elif name.endswith("evicted_tokens_total"):
            out["evicted_tokens"] += v
    return out


@dataclass
class _Counts:
    sent: int = 0
    completed: int = 0
    aborted: int = 0  # closed by kltui on purpose (abort requests, pauses)
    errors: int = 0
    prompt_tokens: int = 0
    by_kind: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    max_in_flight: int = 0
    evictions_observed: int = 0
    last_error: str | None = None


class Traffic:
    """The background traffic at one server during one stressed run."""

    def __init__(
        self,
        url: str,
        level: StressLevel,
        prompts: list[np.ndarray],
        info: dict,
        *,
        seed: int,
        max_new_tokens: int,
        api_key: str | None = None,
        timeout: float = 600.0,
    ) -> None:
        self.url, self.level = url.rstrip("/"), level
        self.prompts = [np.asarray(p, dtype=np.int64).tolist() for p in prompts if len(p)]
        pool = [t for p in self.prompts for t in p]
        self.vocab = sorted(set(pool)) or [0]
        self.rng = random.Random(seed)
        self.max_new = max_new_tokens
        running = int(info.get("max_running_requests") or 0)
        self.concurrency = level.concurrency or max(1, min(running or 64, 256) + 8)
        ctx = int(info.get("context_length") or info.get("max_req_input_len") or 4096)
        pool_tokens = int(info.get("max_total_tokens") or info.get("max_total_num_tokens") or 0)
        chunk = int(info.get("chunked_prefill_size") or 0)
        cap = max(16, min(ctx - 16, level.long_max))
        want = int(level.long_pool * pool_tokens) if pool_tokens else cap
        if chunk > 0:
            want = max(want, int(chunk * 0.75))  # a waiting long prompt pushes a step past it
        self.long_tokens = max(16, min(cap, want))
        self.pool_tokens = pool_tokens
        self.request_cap = max(16, ctx - 16)  # the longest prompt the server takes
        self.squeezes: list[dict[str, Any]] = []
        self._later: asyncio.Task | None = None
        self.page = max(1, int(info.get("page_size") or 1))
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=30.0),
            headers=headers,
            limits=httpx.Limits(max_connections=self.concurrency + 4),
        )
        self.counts = _Counts()
        self.in_flight = 0
        self.stopped: str | None = None  # "requests" | "seconds" | "stopped"
        self._sent_inputs: list[tuple[list[int], int]] = []  # reuse candidates: ids, cached
        self._next = 0
        self._open = asyncio.Event()
        self._workers: list[asyncio.Task] = []
        self._calls: set[asyncio.Task] = set()
        self._admitted = 0
        self._t0 = 0.0
        self._metrics0: dict[str, float] | None = None
        self.metrics_note: str | None = None
        # while a helper's path must be cold (match's decode), no request shares its prompts
        self.cold = False
        self._firsts = {p[0] for p in self.prompts if p}

    # ---- the plan, as the first tick says it ----

    def plan(self) -> dict[str, Any]:
        """What this level sends at this server, with its bounds."""
        lvl = self.level
        return {
            "concurrency": self.concurrency,
            "max_requests": lvl.requests,
            "max_seconds": lvl.seconds,
            "long_tokens": self.long_tokens,
            "kinds": list(KINDS),
        }

    def snapshot(self) -> dict[str, Any]:
        """The counts so far (cumulative), JSON-safe."""
        c = self.counts
        return {
            "sent": c.sent,
            "completed": c.completed,
            "aborted": c.aborted,
            "errors": c.errors,
            "in_flight": self.in_flight,
            "max_in_flight": c.max_in_flight,
            "prompt_tokens": c.prompt_tokens,
            "by_kind": dict(c.by_kind),
            "evictions_observed": c.evictions_observed,
            "squeezes": [dict(q) for q in self.squeezes],
            "stopped": self.stopped,
            "last_error": c.last_error,
            "elapsed_s": round(time.monotonic() - self._t0, 3) if self._t0 else 0.0,
        }

    def tick(self, moment: str, **extra: Any) -> StressTick:
        """The counts now, as the event the stream carries."""
        return StressTick(self.url, self.level.name, moment, self.snapshot() | extra)

    # ---- lifecycle ----

    async def start(self) -> StressTick:
        """Reads the server's counters and starts the workers (paused until a phase)."""
        self._t0 = time.monotonic()
        self._metrics0 = await self._metrics()
        self._workers = [asyncio.create_task(self._worker()) for _ in range(self.concurrency)]
        return self.tick("start", plan=self.plan(), metrics=self._metrics0 is not None)

    async def pause(self) -> None:
        """No new requests; those in flight are closed (the server aborts them)."""
        if self._later is not None:
            self._later.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._later
            self._later = None
        self._open.clear()
        calls = list(self._calls)
        for t in calls:
            t.cancel()
        for t in calls:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._sent_inputs.clear()  # a helper flushes now: earlier hits say nothing

    async def resume(self, cold: bool = False, ahead: bool = False) -> None:
        """Traffic again, returning once its first requests are in (or PRIME_S passed).
        `cold`: the phase must find nothing of its prompts cached (match's decode, which
        checks it), so no request shares them until the next phase. `ahead`: two long
        prompts are queued just before the phase's own request (a scoring prefill: only
        after its hits, so the pool they fill evicts nothing a helper still needs)."""
        self.cold = cold
        if self.stopped:
            return
        admitted = self._admitted
        self._open.set()
        want = min(self.concurrency, 4)
        deadline = time.monotonic() + PRIME_S
        while self._admitted - admitted < want and time.monotonic() < deadline:
            if self.stopped:
                break
            await asyncio.sleep(0.01)
        if not ahead:
            return
        for gap in PRIME_GAPS_S:
            if self._bounded():
                break
            # two long prompts just ahead of the helper's own request: while the scheduler
            # runs the first one's prefill, the second and the helper's batch wait and are
            # admitted into one step together (a step past the chunk budget)
            self._extra("long")
            await asyncio.sleep(gap)

    async def squeeze(self, helper: str) -> None:
        """The squeeze before `helper`'s hits (see the module's docstring); the traffic is
        paused, and stays so until `resume_soon`."""
        pool = self.pool_tokens
        note: dict[str, Any] = {"helper": helper, "pool": pool or None}
        self.squeezes.append(note)
        if not pool:
            note["skipped"] = "the server reports no KV pool size (max_total_num_tokens)"
            return
        # what the pool holds: the helper's warmed prompts alone, as the traffic has been
        # paused since its flush (SGLang's token_usage leaves evictable cache out, so no
        # gauge of the server says it)
        used = sum(len(p) // self.page * self.page for p in self.prompts)
        # the free space plus a seeded quarter to three quarters of what is held: the eviction
        # stops inside the helper's prefixes, at another place in each seeded run
        share = self.rng.uniform(0.25, 0.75)
        target = max(0, pool - used) + int(used * share)
        note |= {"used": used, "target": target}
        if target > self.level.squeeze_max:
            # the figures beside the words: the reading reads these (readings/stress.py)
            note |= {"level": self.level.name, "squeeze_max": self.level.squeeze_max}
            note["skipped"] = (
                f"{target} tokens needed, over the {self.level.name} level's "
                f"{self.level.squeeze_max}"
            )
            return
        sent = 0
        while sent < target and not self._bounded():
            n = min(target - sent, self.request_cap)
            body = {
                "input_ids": self._foreign(n),
                "sampling_params": {"temperature": 0.0, "max_new_tokens": 1},
                "stream": True,
            }
            self._count("squeeze", body)
            await self._send("squeeze", body)  # one after another: each evicts the oldest
            sent += n
        note["sent_tokens"] = sent

    def resume_soon(self) -> None:
        """The traffic again once the helper's own requests are in."""

        async def later() -> None:
            await asyncio.sleep(RESUME_AFTER_SQUEEZE_S)
            await self.resume()

        self._later = asyncio.create_task(later())

    def _extra(self, kind: str) -> None:
        """One request outside the workers (counted and bounded as theirs are)."""
        body = self._body(kind)
        self._count(kind, body)
        call = asyncio.create_task(self._send(kind, body))
        self._calls.add(call)
        call.add_done_callback(self._extra_done)

    def _count(self, kind: str, body: dict[str, Any]) -> None:
        """One request of `kind` sent (every request is counted and bounded the same way)."""
        self.counts.sent += 1
        self.counts.by_kind[kind] = self.counts.by_kind.get(kind, 0) + 1
        self.counts.prompt_tokens += len(body["input_ids"])

    def _extra_done(self, call: asyncio.Task) -> None:
        self._calls.discard(call)
        if call.cancelled():  # closed by a pause, as the workers' are counted
            self.counts.aborted += 1

    async def stop(self) -> StressTick:
        """Ends the traffic; the last tick, with the server's counters since start."""
        if self.stopped is None:
            self.stopped = "stopped"
        await self.pause()  # a resume_soon still pending is cancelled with it
        for w in self._workers:
            w.cancel()
        if self._workers:
            await asyncio.wait(self._workers, timeout=STOP_S)
        after = await self._metrics()
        await self.http.aclose()
        server: dict[str, float] | None = None
        if self._metrics0 is not None and after is not None:
            server = {k: after[k] - self._metrics0.get(k, 0.0) for k in after}
        return self.tick("end", server=server, metrics_note=self.metrics_note)

    async def _metrics(self) -> dict[str, float] | None:
        try:
            r = await self.http.get(f"{self.url}/metrics", timeout=METRICS_TIMEOUT_S)
        except httpx.HTTPError as e:
            self.metrics_note = f"/metrics unreachable ({type(e).__name__})"
            return None
        if r.status_code != 200:
            self.metrics_note = (
                f"/metrics answered HTTP {r.status_code} (SGLang serves it with --enable-metrics)"
            )
            return None
        return read_metrics(r.text)

    # ---- the requests ----

    def _bounded(self) -> bool:
        if self.counts.sent >= self.level.requests:
            self.stopped = self.stopped or "requests"
        elif time.monotonic() - self._t0 >= self.level.seconds:
            self.stopped = self.stopped or "seconds"
        return self.stopped is not None

    async def _worker(self) -> None:
        while True:
            await self._open.wait()
            if self._bounded():
                return
            kind = KINDS[self._next % len(KINDS)]
            self._next += 1
            body = self._body(kind)
            self._count(kind, body)
            call = asyncio.create_task(self._send(kind, body))
            self._calls.add(call)
            try:
                await call
            except asyncio.CancelledError:
                me = asyncio.current_task()
                # the worker's own cancellation (stop) must end it; a paused call's must not
                if not call.cancelled() or (me is not None and me.cancelling()):
                    raise
                self.counts.aborted += 1
            finally:
                self._calls.discard(call)

    def _ids(self, n: int) -> list[int]:
        return [self.rng.choice(self.vocab) for _ in range(max(0, n))]

    def _foreign(self, n: int) -> list[int]:
        """n ids that share no first token (so no radix prefix) with any helper prompt."""
        starts = [t for t in self.vocab if t not in self._firsts] or self.vocab
        return [self.rng.choice(starts), *self._ids(n - 1)]

    def _body(self, kind: str) -> dict[str, Any]:
        p = self.prompts[self.rng.randrange(len(self.prompts))] if self.prompts else [0]
        if self.cold:
            p = self._foreign(len(p))
        sp: dict[str, Any] = {"temperature": 0.0, "ignore_eos": True, "max_new_tokens": 4}
        body: dict[str, Any] = {"stream": True, "sampling_params": sp}
        if kind == "shared":
            k = max(1, len(p) // 2)
            ids = p[:k] + self._ids(len(p) + self.max_new + 8 - k)
            body |= {"return_logprob": True, "logprob_start_len": 0}
        elif kind == "reuse":
            if self._sent_inputs and self.rng.random() < 0.5 and not self.cold:
                ids = list(self._sent_inputs[self.rng.randrange(len(self._sent_inputs))][0])
            else:
                ids = list(p)
            sp["max_new_tokens"] = 2
        elif kind == "long":
            ids = self._foreign(self.long_tokens)
            sp["max_new_tokens"] = 2
        elif kind == "abort":
            ids = list(p) + self._ids(16)
            sp["max_new_tokens"] = max(16, self.max_new)
        else:
            ids = list(p)
            sp["max_new_tokens"] = max(8, self.max_new)
        body["input_ids"] = ids
        return body

    async def _send(self, kind: str, body: dict[str, Any]) -> None:
        self.in_flight += 1
        self.counts.max_in_flight = max(self.counts.max_in_flight, self.in_flight)
        first = True
        cached = 0
        try:
            async with self.http.stream("POST", f"{self.url}/generate", json=body) as r:
                if r.status_code != 200:
                    self._error(f"HTTP {r.status_code} on a {kind} request")
                    return
                async for line in r.aiter_lines():
                    if not line.startswith("data:") or line.strip() == "data: [DONE]":
                        continue
                    if '"error"' in line:
                        self._error(f"an error chunk on a {kind} request")
                        return
                    cached = _cached_tokens(line, cached)
                    if first:
                        first = False
                        self._admitted += 1
                        if kind == "abort":
                            self.counts.aborted += 1
                            return
            self.counts.completed += 1
            if kind in ("reuse", "long"):
                self._observe(body["input_ids"], cached)
        except httpx.HTTPError as e:
            self._error(f"{type(e).__name__} on a {kind} request")
        finally:
            self.in_flight -= 1

    def _observe(self, ids: list[int], cached: int) -> None:
        """A resent input whose hit is shorter than its earlier one: something was evicted."""
        for i, (seen, before) in enumerate(self._sent_inputs):
            if seen == ids:
                if cached < before:
                    self.counts.evictions_observed += 1
                self._sent_inputs[i] = (seen, cached)
                return
        # a full hit is at most len - 1 tokens, page-rounded (SGLang computes one token)
        full = (len(ids) - 1) // self.page * self.page
        self._sent_inputs.append((ids, full))
        del self._sent_inputs[:-64]

    def _error(self, what: str) -> None:
        self.counts.errors += 1
        self.counts.last_error = what


def _cached_tokens(line: str, default: int) -> int:
    key = '"cached_tokens":'
    i = line.find(key)
    if i < 0:
        return default
    j = i + len(key)
    k = j
    while k < len(line) and (line[k].isdigit() or line[k] == " "):
        k += 1
    try:
        return int(line[j:k])
    except ValueError:
        return default
