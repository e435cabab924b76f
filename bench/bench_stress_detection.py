"""Detection benchmark of the planted state bugs, with and without `--stress` (issue 32).

    python bench/bench_stress_detection.py [--runs 20] [--false-runs 100] [--level light]

For every fault of the reference server (kltui/reference/faults.py) it starts one deterministic
reference server with an undersized pool, as SGLang's cache consistency test does
(SERVER_ARGS), and runs `--runs` seeded sessions of quiet + stressed through the run driver
(exactly what `kltui check --stress` runs). A fault is caught *without stress* when the quiet
run alone shows it (a helper not bit-exact on a deterministic server), *with stress* when the
quiet run or the stressed-vs-quiet reading (readings/stress.py) does. Per fault it prints the
recall of both, the first divergence (helper, sample, position, side) against the position the
fault predicts where it predicts one, and the trigger the reading names; then the false alarms
of `--stress` on the same server without a fault. The table goes into docs/DIAGNOSIS.md;
tests/integration/test_stress_detection.py pins it with one seeded run per fault.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kltui.readings.stress import StressReading  # noqa: E402
from kltui.reference.launcher import ReferenceServer  # noqa: E402
from kltui.run.config import RunConfig  # noqa: E402
from kltui.run.driver import RunDriver, RunOutcome  # noqa: E402
from kltui.session.store import SessionStore  # noqa: E402
from kltui.words.stress import activity_line  # noqa: E402

# an undersized pool and small chunks, so that background traffic evicts and crosses chunk
# boundaries, while a quiet helper (SAMPLES prompts of 16-96 tokens) fits both
SERVER_ARGS = (
    "--enable-metrics",
    "--max-total-tokens",
    "1024",
    "--chunked-prefill-size",
    "384",
    "--test-retract-interval",
    "7",
)
SAMPLES, NEW_TOKENS = 4, 8
KV_AFTER = 24
FAULTS = {
    f"kv-corrupt-after:{KV_AFTER}": f"position {KV_AFTER} (no load needed)",
    "stale-prompt-logprobs": "another request's prompt logprobs on a shared prefix",
    "chunk-boundary": "a prefill step past --chunked-prefill-size",
    "batch-switch:6": "more than 6 running requests",
    "evict-under-pressure": "a radix eviction in a full pool",
}


@dataclass
class Trial:
    """One seeded session: did the quiet run or the reading catch the fault, and where."""

    quiet: bool
    stressed: bool
    where: str  # the first divergence, as words
    trigger: str  # what the reading says the traffic did there
    exact: bool | None  # the first position is the one the fault predicts (None: no prediction)
    reading: StressReading | None = None


@dataclass
class Row:
    fault: str
    trials: list[Trial] = field(default_factory=list)


class _Keep:
    """A RunView that keeps each run's store (the benchmark prints nothing live)."""

    def __init__(self) -> None:
        self.outcomes: list[RunOutcome] = []

    def start_run(self, run_no: int) -> SessionStore:
        return SessionStore()

    def event(self, ev) -> None:
        pass

    def run_ended(self, outcome: RunOutcome) -> None:
        self.outcomes.append(outcome)

    def retrying(self, seconds, attempt) -> None:
        pass


def config(url: str, seed: int, level: str, helpers: list[str] | None = None) -> RunConfig:
    """The run of one trial: the built-in prompts cut to SAMPLES, NEW_TOKENS each."""
    cfg = RunConfig(servers=[url], samples=SAMPLES, max_new_tokens=NEW_TOKENS, seed=seed)
    if helpers:
        cfg.helpers = list(helpers)
    cfg.stress = level
    return cfg


def quiet_caught(store: SessionStore) -> tuple[bool, str, bool | None, str]:
    """Whether a quiet run shows the fault (a deterministic server must be bit-exact), where."""
    best = None
    # match first: its decode is cold, so kv-corrupt-after's position is predicted there (a
    # cache helper restores KV that turn 1's corrupted decode steps wrote, so it differs earlier)
    ordered = sorted(store.helpers.values(), key=lambda st: st.helper != "match")
    for st in ordered:
        if best is not None:
            break
        for s in st.book.order:
            first = st.book.samples[s].metrics.first_divergence
            if first is not None and (best is None or first < best[2]):
                best = (st.helper, s, first, st.book.samples[s].prompt_len)
    if best is None:
        return False, "", None, ""
    helper, sample, pos, plen = best
    # kv-corrupt-after:N: token j is decoded at position plen + j - 1 and first reads N there,
    # for every match sample that reaches it
    expect = max(1, KV_AFTER - plen + 2)
    match = next((st for st in store.helpers.values() if st.helper == "match"), None)
    exact = None
    if match is not None:
        got = [
            (match.book.samples[s].metrics.first_divergence, _predicted(match.book.samples[s]))
            for s in match.book.order
        ]
        exact = all(f == p for f, p in got) and any(f is not None for f, _ in got)
    return True, f"{helper} sample {sample} @ {pos} (predicted {expect})", exact, "position"


def _predicted(sample) -> int | None:
    """Where kv-corrupt-after:N first shows in a cold decode of this sample (None: never)."""
    j = max(1, KV_AFTER - sample.prompt_len + 2)
    return j if j < sample.token_ids.size else None


def trial(outcomes: list[RunOutcome], fault: str) -> Trial:
    quiet, stressed = outcomes[0], outcomes[1]
    q_caught, q_where, exact, _ = quiet_caught(quiet.store)
    if not fault.startswith("kv-corrupt"):
        exact = None
    FAULTS.setdefault(fault, fault)
    reading = stressed.stress
    s_caught = bool(reading and reading.state_bug)
    where, trigger = q_where, FAULTS[fault] if q_caught else ""
    if reading is not None and s_caught:
        bug = next(h for h in reading.helpers if h.state_bug)
        f = bug.first
        where = f"{bug.helper} sample {f.sample} @ {f.first} ({f.side})" if f else f"{bug.helper}"
        trigger = activity_line(bug.during) if bug.during else "traffic running"
    return Trial(q_caught, q_caught or s_caught, where, trigger, exact, reading)


async def run_trials(
    url: str, fault: str, seeds: range, level: str, helpers: list[str] | None = None
) -> Row:
    row = Row(fault)
    for seed in seeds:
        view = _Keep()
        driver = RunDriver(config(url, seed, level, helpers))
        await driver.session(view)
        if len(view.outcomes) == 2:
            t = trial(view.outcomes, fault)
            row.trials.append(t)
            print(
                f"{fault} seed {seed}: quiet {t.quiet}, stressed {t.stressed}, {t.where}",
                file=sys.stderr,
                flush=True,
            )
    return row


def measure(
    fault: str, runs: int, level: str, seed0: int = 0, helpers: list[str] | None = None
) -> Row:
    """`runs` seeded trials on a fresh deterministic reference server with `fault`."""
    with ReferenceServer(
        deterministic=True, fault=fault, random_seed=0, extra_args=SERVER_ARGS
    ) as srv:
        seeds = range(seed0, seed0 + runs)
        return asyncio.run(run_trials(srv.url, fault, seeds, level, helpers))


def table(rows: list[Row], false_row: Row | None) -> list[str]:
    out = [
        "| fault (trigger) | caught quiet | caught with --stress | first divergence | exact | "
        "what the traffic did there |",
        "|---|---:|---:|---|---|---|",
    ]
    for r in rows:
        n = len(r.trials) or 1
        q = sum(t.quiet for t in r.trials)
        s = sum(t.stressed for t in r.trials)
        first = next((t for t in r.trials if t.stressed), None)
        ex = [t.exact for t in r.trials if t.exact is not None]
        exact = f"{sum(ex)}/{len(ex)}" if ex else "n/a"
        out.append(
            f"| `{r.fault}` ({FAULTS[r.fault]}) | {q}/{n} | {s}/{n} | "
            f"{first.where if first else '-'} | {exact} | {first.trigger if first else '-'} |"
        )
    if false_row is not None:
        n = len(false_row.trials)
        fa = sum(t.stressed for t in false_row.trials)
        out.append(f"\nfalse alarms of --stress on the same server without a fault: {fa}/{n}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--false-runs", type=int, default=100)
    ap.add_argument("--level", default="light")
    ap.add_argument("--faults", default=",".join(FAULTS))
    a = ap.parse_args()
    t0 = time.perf_counter()
    rows = [measure(f, a.runs, a.level) for f in a.faults.split(",") if f]
    false_row = measure("none", a.false_runs, a.level) if a.false_runs else None
    print(
        f"{a.runs} seeded runs per fault, {a.false_runs} without; level {a.level}; "
        f"{SAMPLES} samples x {NEW_TOKENS} tokens; server {' '.join(SERVER_ARGS)} "
        f"--deterministic ({time.perf_counter() - t0:.0f} s)\n"
    )
    print("\n".join(table(rows, false_row)))


if __name__ == "__main__":
    main()
