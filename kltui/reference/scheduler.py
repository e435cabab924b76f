"""The scheduler loop: one thread that admits waiting requests and runs engine steps, like a real
server's scheduler process. HTTP handlers submit work and receive per-step progress through a
callback; the torch work never runs on the event loop, so HTTP stays responsive.

Policy (SGLang's default shape): if requests are waiting, prefill as many of them together as fit
the prefill token budget; otherwise decode one token for every running request together.
`retract_interval` (SGLang's SGLANG_TEST_RETRACT_INTERVAL, as its cache consistency test sets it)
retracts the newest running request every that many decode steps while two or more run: its KV
is dropped and it waits at the front of the queue to be prefilled again, so a correct server
gives the same tokens and logprobs as without it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kltui.reference.engine import Active, Engine, GenRequest, Progress

log = logging.getLogger("kltui.reference")

Sink = Callable[[int, Progress], None]


@dataclass(eq=False)
class Ticket:
    """One HTTP request's batch: its items share a sink and are aborted together."""

    sink: Sink
    aborted: bool = False


@dataclass(eq=False)
class _Entry:
    ticket: Ticket
    index: int
    req: GenRequest
    active: Active | None = None


@dataclass
class Stats:
    generated_tokens: int = 0
    steps: int = 0
    decode_steps: int = 0
    retracted: int = 0  # requests retracted since start (sglang:num_retracted_requests_total)
    recent: deque = field(default_factory=lambda: deque(maxlen=64))  # (time, new tokens)

    def throughput(self) -> float:
        if len(self.recent) < 2:
            return 0.0
        span = self.recent[-1][0] - self.recent[0][0]
        return sum(n for _, n in list(self.recent)[1:]) / span if span > 0 else 0.0


class Scheduler:
    def __init__(
        self,
        engine: Engine,
        *,
        max_running: int = 128,
        max_prefill_tokens: int = 8192,
        retract_interval: int | None = None,
    ):
        self.engine = engine
        self.max_running = max_running
        self.max_prefill_tokens = max_prefill_tokens
        self.retract_interval = retract_interval
        self.stats = Stats()
        self._cv = threading.Condition()
        self._waiting: deque[_Entry] = deque()
        self._running: list[_Entry] = []
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="kltui-scheduler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        self._thread.join(timeout=5)

    def submit(self, reqs: Sequence[GenRequest], sink: Sink) -> Ticket:
        ticket = Ticket(sink)
        with self._cv:
            self._waiting.extend(_Entry(ticket, i, r) for i, r in enumerate(reqs))
            self._cv.notify_all()
        return ticket

    def abort(self, ticket: Ticket) -> None:
        with self._cv:
            ticket.aborted = True
            self._cv.notify_all()

    def counts(self) -> tuple[int, int]:
        with self._cv:
            return len(self._waiting), len(self._running)

    def flush_if_idle(self) -> bool:
        """Flush the radix cache unless any request is waiting or running (SGLang's rule)."""
        with self._cv:
            if self._waiting or self._running:
                return False
            self.engine.flush()
            return True

    # ---- the thread ----

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not (self._stopping or self._waiting or self._running):
                    self._cv.wait()
                if self._stopping:
                    return
                self._drop_aborted()
                admitted = self._admit()
                # Admitted entries count as running from here on, so a flush sees them as busy.
                self._running.extend(admitted)
                decoding = [] if admitted else list(self._running)
            if not admitted and not decoding:
                continue
            deliveries = self._step(admitted, decoding)
            with self._cv:
                self._running = [e for e in self._running if not e.active.finished]
                if decoding:
                    self._maybe_retract()
            # Deliver after the finished entries left the running list: a client that flushes
            # right after its last event must find the server idle.
            for entry, progress in deliveries:
                self._deliver(entry, progress)

    def _drop_aborted(self) -> None:
        if any(e.ticket.aborted for e in self._waiting):
            self._waiting = deque(e for e in self._waiting if not e.ticket.aborted)
        self._running = [e for e in self._running if not e.ticket.aborted]

    def _maybe_retract(self) -> None:
        self.stats.decode_steps += 1
        every = self.retract_interval
        if not every or self.stats.decode_steps % every or len(self._running) < 2:
            return
        victim = self._running.pop()  # the newest, as SGLang retracts the last admitted
        self.engine.retract(victim.active)
        self._waiting.appendleft(victim)
        self.stats.retracted += 1

    def _admit(self) -> list[_Entry]:
        admitted: list[_Entry] = []
        budget = self.max_prefill_tokens
        straddle = self.engine.fault.chunk_boundary
        while self._waiting and len(self._running) + len(admitted) < self.max_running:
            head = self._waiting[0]
            n = len(head.active.prefill_ids() if head.active else head.req.input_ids)
            if admitted and n > budget:
                if straddle and budget > 0:
                    # chunked prefill admits the first chunk of the request that does not fit
                    admitted.append(self._waiting.popleft())
                break
            budget -= n
            admitted.append(self._waiting.popleft())
        return admitted

    def _step(
        self, admitted: list[_Entry], decoding: list[_Entry]
    ) -> list[tuple[_Entry, Progress]]:
        entries = admitted or decoding
        resumed = {id(e) for e in admitted if e.active is not None and e.active.resume}
        try:
            if admitted:
                for e in admitted:
                    if e.active is None:
                        e.active = self.engine.admit(e.req)
                        e.active.origin = id(e.ticket)
                results = self.engine.prefill([e.active for e in admitted])
            else:
                results = self.engine.decode([e.active for e in decoding])
        except Exception as exc:  # a bug must fail its requests, not the server
            log.exception("engine step failed")
            reason = {
                "type": "abort",
                "message": f"internal error in the reference engine: {exc!r}",
                "status_code": 500,
                "err_type": "InternalServerError",
            }
            results = []
            for e in entries:
                if e.active is None:
                    e.active = self.engine.admit(e.req)
                e.active.finished = True
                results.append(Progress(finish_reason=reason))
        now = time.monotonic()
        new = sum(len(p.new_ids) for p in results)
        self.stats.generated_tokens += new
        self.stats.steps += 1
        self.stats.recent.append((now, new))
        # a retracted request's second prefill has nothing to say to its client
        return [(e, p) for e, p in zip(entries, results, strict=True) if id(e) not in resumed]

    def _deliver(self, entry: _Entry, progress: Progress) -> None:
        if entry.ticket.aborted:
            return
        try:
            entry.ticket.sink(entry.index, progress)
        except Exception:  # the client's loop may be gone; its requests are finished anyway
            log.debug("dropped progress for a closed client", exc_info=True)
