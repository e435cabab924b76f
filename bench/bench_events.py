"""How many events per second the dashboard absorbs while staying responsive.

python bench/bench_events.py [--samples 64] [--tokens 2048] [--batch 1,16,256] [--record]

A synthetic live run (64 samples x 2048 tokens streamed one token per TokensDecoded event,
interleaved across samples as a batched SSE stream arrives, then scored) is pumped through the
real path: consume.pump -> SessionStore -> app.feed_event -> coalesced redraws. `--batch N`
is how many events arrive per event-loop turn (per network read); `--record` also writes the
recording, as a live run does. Responsiveness is the lateness of a 20 Hz timer running inside
the app (what a key press would wait for) and the longest redraw.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

import numpy as np

from kltui.metrics.k3 import ScoreBook
from kltui.session.consume import pump
from kltui.session.events import (
    HelperFinished,
    HelperStarted,
    PhaseChanged,
    RunFinished,
    RunStarted,
    SampleScored,
    TokensDecoded,
)
from kltui.session.recording import Recorder
from kltui.tui.app import KltuiApp

URL = "http://bench"


class SyntheticFeed:
    mode = "live"
    servers = [URL]

    def __init__(self, samples: int, tokens: int, batch: int, record: str | None) -> None:
        self.samples, self.tokens, self.batch, self.record = samples, tokens, batch, record
        self.count = 0
        self.t0 = self.t1 = 0.0
        self.c0 = self.c1 = 0.0
        self.done = asyncio.Event()

    async def events(self):
        n, t = self.samples, self.tokens
        rng = np.random.default_rng(0)
        ids = rng.integers(0, 32000, (n, t))
        lp_b = -rng.random((n, t)) * 6
        lp_a = lp_b + rng.normal(0, 1e-4, (n, t))
        yield RunStarted(
            "bench",
            time.time(),
            {"helpers": ["match"]},
            [{"url": URL}],
            {"source": "synthetic", "n": n, "tokens": 0, "sha256": "0"},
            "bench",
        )
        yield HelperStarted("match", URL, n, 2e-3, 1e-3, {"max_new_tokens": t})
        yield PhaseChanged("match", URL, "decode")
        self.t0, self.c0 = time.perf_counter(), time.thread_time()
        k = 0
        for pos in range(t):
            for s in range(n):
                yield TokensDecoded(
                    "match", URL, s, pos, ids[s, pos : pos + 1], lp_b[s, pos : pos + 1]
                )
                k += 1
                if k % self.batch == 0:
                    await asyncio.sleep(0)  # the next network read
        yield PhaseChanged("match", URL, "score")
        book = ScoreBook()
        for s in range(n):
            book.add(s, ids[s], lp_a[s], lp_b[s])
            yield SampleScored("match", URL, s, ids[s], lp_a[s], lp_b[s], 0, 100)
            await asyncio.sleep(0)
        summary = book.summary(n_samples=n, n_skipped=0, threshold=2e-3)
        summary["status"] = "pass"
        yield HelperFinished("match", URL, summary)
        yield RunFinished({}, "pass")
        self.t1, self.c1 = time.perf_counter(), time.thread_time()

    async def run(self, sink) -> None:
        store = sink.feed_start_run()
        recorder = Recorder(self.record) if self.record else None

        def on_event(ev):
            self.count += 1
            sink.feed_event(ev)

        try:
            await pump(self.events(), store, recorder, on_event)
        finally:
            if recorder is not None:
                recorder.close()
        sink.feed_end_run(store, counted=True, recording=self.record)
        self.done.set()


async def measure(samples: int, tokens: int, batch: int, record: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        feed = SyntheticFeed(samples, tokens, batch, f"{tmp}/r.jsonl" if record else None)
        app = KltuiApp(feed)
        late: list[float] = []
        redraws: list[float] = []
        async with app.run_test(size=(160, 50)) as pilot:
            real = app.refresh_views

            def timed_refresh(**kw):
                t = time.perf_counter()
                real(**kw)
                redraws.append((time.perf_counter() - t) * 1000)

            app.refresh_views = timed_refresh
            period = 0.05
            last = [time.perf_counter()]

            def beat() -> None:
                now = time.perf_counter()
                late.append(max(0.0, (now - last[0] - period) * 1000))
                last[0] = now

            app.set_interval(period, beat)
            await asyncio.wait_for(feed.done.wait(), timeout=600)
            await pilot.pause(0.2)
            assert app.store.finished is not None
            app.exit()
    decoded = samples * tokens
    seconds = feed.t1 - feed.t0
    late.sort()
    return {
        "events": feed.count,
        "seconds": seconds,
        "rate": decoded / seconds,
        # the app's only thread: its CPU time per event does not depend on other load
        "cpu_rate": decoded / (feed.c1 - feed.c0),
        "late_p50": statistics.median(late) if late else 0.0,
        "late_p99": late[int(0.99 * (len(late) - 1))] if late else 0.0,
        "late_max": late[-1] if late else 0.0,
        "redraws": len(redraws),
        "redraw_max": max(redraws) if redraws else 0.0,
        "redraw_p50": statistics.median(redraws) if redraws else 0.0,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--batch", default="1,16,256")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    print(
        f"event absorption: {args.samples} samples x {args.tokens} tokens as TokensDecoded "
        f"events{' + recording' if args.record else ''}"
    )
    print(
        "  events/turn   events/s (per CPU-s)   timer lateness p50/p99/max (ms)   "
        "redraws  redraw p50/max"
    )
    for batch in (int(b) for b in args.batch.split(",")):
        r = asyncio.run(measure(args.samples, args.tokens, batch, args.record))
        print(
            f"  {batch:>11} {r['rate']:>10,.0f} ({r['cpu_rate']:>8,.0f})   "
            f"{r['late_p50']:6.1f} / {r['late_p99']:6.1f} / "
            f"{r['late_max']:6.1f}        {r['redraws']:>7}  {r['redraw_p50']:5.1f}/"
            f"{r['redraw_max']:5.1f} ms"
        )


if __name__ == "__main__":
    main()
