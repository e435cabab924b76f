"""`kltui monitor` runs for days: its memory must stay flat over probes (issue 48).

Runs the monitor in this process against a reference server, probe after probe (`--every 0`),
as `kltui monitor --headless --prometheus` does: each probe recorded into a runs folder pruned to
KEEP recordings, read, printed (to /dev/null) and fed to the Prometheus metrics, whose
exposition is scraped after every probe. Prints the resident set size (VmRSS) at checkpoints and
the growth from the 100th probe to the last, and the probes' mean load and seconds.

    python bench/bench_monitor.py [--probes 1000] [--keep 20] [--helpers match]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class Bench:
    """The monitor's view for the bench: the console (to /dev/null) and the metrics, as the
    headless command; RSS at checkpoints."""

    def __init__(self, total: int, metrics, console) -> None:
        self.total, self.metrics, self.console = total, metrics, console
        self.rss: dict[int, int] = {}
        self.seconds: list[float] = []
        self.requests: list[int] = []
        self.tokens: list[int] = []
        self.errors = 0

    def probe_started(self, number: int, at: float) -> None:
        pass

    def probe_ended(self, r) -> None:
        self.console.probe_ended(r)  # feeds the metrics too
        self.metrics.exposition()  # a scrape after every probe
        self.seconds.append(r.seconds)
        self.requests.append(r.requests)
        self.tokens.append(r.reading.tokens)
        self.errors += bool(r.reading.errors)
        n = r.number
        if n in (1, 10, 100) or n % 100 == 0 or n == self.total:
            self.rss[n] = rss_kib()
            print(f"probe {n}: VmRSS {self.rss[n] / 1024:.1f} MiB", flush=True)


async def main_async(args) -> None:
    from rich.console import Console

    from kltui.outputs.monitor_console import ConsoleMonitor
    from kltui.outputs.prometheus import MonitorMetrics
    from kltui.reference.launcher import ReferenceServer
    from kltui.run.config import RunConfig
    from kltui.run.monitor import Monitor, probe_recordings
    from kltui.session.runs import prune

    runs = Path(tempfile.mkdtemp(prefix="kltui-bench-monitor-"))
    os.environ["KLTUI_RUNS_DIR"] = str(runs)
    with ReferenceServer(deterministic=True) as srv, open(os.devnull, "w") as null:
        cfg = RunConfig(
            servers=[srv.url],
            helpers=args.helpers.split(","),
            samples=args.samples,
            max_new_tokens=args.max_new_tokens,
            max_prompt_tokens=48,
        )
        metrics = MonitorMetrics(every=0)
        view = Bench(args.probes, metrics, ConsoleMonitor(Console(file=null), metrics))
        monitor = Monitor(
            cfg,
            every=0,
            probes=args.probes,
            record=probe_recordings(runs),
            before_probe=lambda: prune(runs, keep=args.keep - 1, older_than_days=None),
        )
        t0 = time.monotonic()
        await monitor.run(view)
        wall = time.monotonic() - t0
    kept = len(list(runs.glob("*.kltui.jsonl")))
    first = view.rss.get(100) or view.rss[min(view.rss)]
    last = view.rss[max(view.rss)]
    n = len(view.seconds)
    print(
        f"{n} probes in {wall:.0f} s ({sum(view.seconds) / n:.2f} s each, "
        f"{sum(view.requests) / n:.1f} requests and {sum(view.tokens) / n:.0f} tokens each); "
        f"{view.errors} with an error; {kept} recordings kept (KEEP {args.keep})"
    )
    print(
        f"VmRSS: probe 100 {first / 1024:.1f} MiB -> probe {max(view.rss)} "
        f"{last / 1024:.1f} MiB ({(last - first) / 1024:+.1f} MiB)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--probes", type=int, default=1000)
    p.add_argument("--keep", type=int, default=20)
    p.add_argument("--helpers", default="match")
    p.add_argument("--samples", type=int, default=2)
    p.add_argument("--max-new-tokens", type=int, default=4)
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
