"""Heatmap repaint time (DESIGN section 8: a 64 x 2048 run in a 200 x 50 viewport <= 10 ms).

python bench/bench_heatmap.py [--samples 64] [--tokens 2048] [--width 200] [--height 50]

Repaint = what Textual calls when the heatmap must be redrawn: `render_lines` over the whole
viewport (the heatmap's own `render_lines`: cached final strips, or rows built and filtered).
Cases:
  cold     every strip, filtered segment and row reduction recomputed (first paint, theme
           change)
  pan      strips recomputed at a new scroll position, row reductions cached (shift+arrow)
  live     one row changed (a sample just scored), the other 49 from the strip cache
  row      the same, along the path a live update takes: only the changed line is repainted
  warm     nothing changed (a redraw of an unchanged view)
  zoom     geometry changed: reductions and strips recomputed at the new zoom

Each case drops the caches it names before every repaint, so no case is served from a strip
painted by an earlier call of the same case.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import numpy as np
from textual.app import App, ComposeResult
from textual.geometry import Region

from kltui.session.events import HelperStarted, SampleScored
from kltui.session.store import SessionStore
from kltui.tui.widgets.heatmap import Heatmap


def build_store(samples: int, tokens: int) -> SessionStore:
    rng = np.random.default_rng(0)
    store = SessionStore()
    store.apply(
        HelperStarted("match", "http://bench", samples, 2e-3, 1e-3, {"max_new_tokens": tokens})
    )
    for s in range(samples):
        lp_b = -rng.random(tokens) * 6
        lp_a = lp_b + rng.normal(0, 1e-3, tokens) * (rng.random(tokens) < 0.5)
        ids = rng.integers(0, 32000, tokens)
        store.apply(SampleScored("match", "http://bench", s, ids, lp_a, lp_b, 0, 100))
    return store


class BenchApp(App):
    CSS = "Heatmap { width: 1fr; height: 1fr; scrollbar-size: 0 0; }"

    def compose(self) -> ComposeResult:
        yield Heatmap()


def timed(fn, repeat: int) -> list[tuple[float, float]]:
    """(wall ms, CPU ms) per call. The CPU time of this thread is what the repaint costs; the
    wall time also counts waiting for a core, which on a shared machine can dominate."""
    out = []
    for _ in range(repeat):
        c0, t0 = time.thread_time(), time.perf_counter()
        fn()
        out.append(((time.perf_counter() - t0) * 1000, (time.thread_time() - c0) * 1000))
    return out


async def run(args) -> dict[str, list[tuple[float, float]]]:
    store = build_store(args.samples, args.tokens)
    app = BenchApp()
    results: dict[str, list] = {}
    async with app.run_test(size=(args.width, args.height)) as pilot:
        hm = app.query_one(Heatmap)
        st = next(iter(store.helpers.values()))
        hm.show(st, 1)
        await pilot.pause()
        region = Region(0, 0, hm.size.width, hm.size.height)
        assert hm.size.height >= args.height - 1, hm.size

        def repaint() -> None:
            hm._styles_cache.clear()
            hm.render_lines(region)

        def cold() -> None:
            hm.clear_cache()
            repaint()

        results["cold"] = timed(cold, args.repeat)
        results["warm"] = timed(repaint, args.repeat)

        def pan() -> None:
            hm.zoom = 1
            hm._update_virtual_size()
            x = int(hm.scroll_offset.x)
            hm.scroll_to(0 if x else 150, None, animate=False, immediate=True)
            hm.clear_cache(reductions=False, filtered=False)
            repaint()

        hm.zoom = 1
        hm._update_virtual_size()
        await pilot.pause()
        repaint()
        results["pan"] = timed(pan, args.repeat)
        hm.zoom = None
        hm._update_virtual_size()
        hm.scroll_to(0, 0, animate=False, immediate=True)
        repaint()

        rng = np.random.default_rng(1)

        def live() -> None:
            s = int(rng.integers(0, min(args.samples, args.height)))
            scored = st.book.samples[s]
            st.book.add(s, scored.token_ids, scored.lp_a, scored.lp_b, 0, 100)
            repaint()

        results["live"] = timed(live, args.repeat)

        def live_row() -> None:
            # the real live path: only the changed row is marked dirty and repainted
            s = int(rng.integers(0, min(args.samples, args.height)))
            scored = st.book.samples[s]
            st.book.add(s, scored.token_ids, scored.lp_a, scored.lp_b, 0, 100)
            hm._refresh_changed_rows()
            hm.render_lines(region)

        repaint()
        hm._painted_view = hm._view_key()
        results["row"] = timed(live_row, args.repeat)
        zooms = [None, 2, 4, 8, 1]

        def zoom() -> None:
            hm.zoom = zooms[len(results.setdefault("_z", [])) % len(zooms)]
            results["_z"].append(0)
            hm._update_virtual_size()
            hm.scroll_to(0, 0, animate=False, immediate=True)
            hm.clear_cache(filtered=False)
            repaint()

        results["zoom"] = timed(zoom, args.repeat)
        results.pop("_z")
        app.exit()
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--width", type=int, default=200)
    ap.add_argument("--height", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=40)
    args = ap.parse_args()
    results = asyncio.run(run(args))
    print(
        f"heatmap repaint, {args.samples} samples x {args.tokens} tokens, "
        f"viewport {args.width}x{args.height} (budget 10 ms)"
    )
    print("  case   CPU p50   CPU p95   wall p50   wall min")
    for name, samples in results.items():
        wall = sorted(w for w, _ in samples)
        cpu = sorted(c for _, c in samples)
        p95 = cpu[int(0.95 * (len(cpu) - 1))]
        flag = "ok" if statistics.median(cpu) <= 10 else "OVER BUDGET"
        print(
            f"  {name:<5} {statistics.median(cpu):6.2f} ms {p95:6.2f} ms  "
            f"{statistics.median(wall):6.2f} ms  {wall[0]:6.2f} ms  {flag}"
        )


if __name__ == "__main__":
    main()
