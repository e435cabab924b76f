"""Where an ablation sweep's time went, in words (every medium prints it under the table):
server starts, helper runs, stops, --help and kltui's own share (`ablate/sweep.Timing`), then
the --chain's steps (their timing as `dumps/chain.py` records it)."""

from __future__ import annotations

from kltui.ablate.sweep import Sweep, Timing


def timing_line(sweep: Sweep, t: Timing) -> str:
    """Where the sweep's time went (`SweepOutcome.timing`), then its chain's."""

    def s(x: float | None) -> str:
        return "–" if x is None else f"{x:.1f} s"

    share = t.kltui_share
    pct = "" if share is None else f" ({share * 100:.2f}%)"
    line = (
        f"time {s(t.total_s)}: server starts {s(t.start_s)}, helper runs {s(t.run_s)}, "
        f"server stops {s(t.stop_s)}, --help {s(t.help_s)}, kltui "
        f"{'–' if t.kltui_s is None else format(t.kltui_s, '.2f') + ' s'}{pct}"
    )
    ct = (sweep.chain or {}).get("timing")
    if isinstance(ct, dict) and isinstance(ct.get("total_s"), int | float):
        parts = [
            f"{name} {ct[key]:.1f} s"
            for key, name in _CHAIN_STEPS
            if isinstance(ct.get(key), int | float)
        ]
        line += f"; then the chain {ct['total_s']:.1f} s ({', '.join(parts)})"
    return line


# the chain's steps as its timing names them (kltui/dumps/chain.py)
_CHAIN_STEPS = (
    ("relaunch_s", "relaunch"),
    ("match_s", "match"),
    ("dumps_s", "dumps capture and analysis"),
    ("stop_s", "stop"),
    ("probe_s", "op probe"),
)


__all__ = ["timing_line"]
