"""Core budgets (DESIGN section 8): scoring rate, session memory, replay load time, --help time.

python bench/bench_core.py [--samples 1000] [--tokens 4096]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from kltui.metrics.k3 import ScoreBook
from kltui.session.events import HelperStarted, RunFinished, SampleScored
from kltui.session.recording import Recorder, read_recording
from kltui.session.store import SessionStore


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--tokens", type=int, default=4096)
    args = ap.parse_args()
    n, t = args.samples, args.tokens
    rng = np.random.default_rng(0)
    lp_b = -rng.random((n, t)) * 6
    lp_a = lp_b + rng.normal(0, 1e-4, (n, t)) * (rng.random((n, t)) < 0.3)
    ids = rng.integers(0, 32000, (n, t))

    book = ScoreBook()
    t0 = time.perf_counter()
    for i in range(n):
        book.add(i, ids[i], lp_a[i], lp_b[i])
    book.summary(n_samples=n, n_skipped=0, threshold=1e-3)
    dt = time.perf_counter() - t0
    print(f"scoring: {n * t / dt / 1e6:.1f} M tokens/s ({n} x {t} in {dt:.2f} s; budget >= 5)")
    del book

    base = rss_mb()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "big.kltui.jsonl"
        rec = Recorder(path)
        store = SessionStore()
        ev0 = HelperStarted("match", "http://127.0.0.1:1", n, 1e-3, 1e-3)
        rec.write(ev0)
        store.apply(ev0)
        t0 = time.perf_counter()
        for i in range(n):
            ev = SampleScored("match", "http://127.0.0.1:1", i, ids[i], lp_a[i], lp_b[i], 0, 100)
            rec.write(ev)
            store.apply(ev)
        rec.write(RunFinished({}, "pass"))
        rec.close()
        write_s = time.perf_counter() - t0
        print(
            f"session: peak RSS {rss_mb():.0f} MB (process start {base:.0f} MB incl. "
            f"the {lp_a.nbytes * 3 / 2**20:.0f} MB of source arrays; budget <= 400 MB), "
            f"recording written in {write_s:.2f} s, {path.stat().st_size / 2**20:.0f} MB"
        )
        del store
        t0 = time.perf_counter()
        r = read_recording(str(path))
        replay_store = SessionStore()
        for ev in r.events:
            replay_store.apply(ev)
        print(
            f"replay: loaded {len(r.events)} events in {time.perf_counter() - t0:.2f} s "
            "(budget <= 1 s)"
        )

    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "kltui", "--help"], capture_output=True, check=True)
    print(f"kltui --help: {time.perf_counter() - t0:.3f} s (budget <= 0.3 s)")


if __name__ == "__main__":
    main()
