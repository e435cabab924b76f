"""Lines of the TUI's screens that are not a finding's own words: the diagnosis screen's
folded-statistics hint (`tui/screens/diagnosis.py`), the fleet screen's heading lines beside
`words/fleet.py`'s summary (`tui/screens/fleet.py`), and the monitor screen's label over each
helper's strip of probes (`tui/screens/monitor.py`)."""

from __future__ import annotations


def statistics_fold(n: int, shown: bool) -> str:
    """The diagnosis screen's line under the evidence: how many statistics lines are folded
    behind space, or (`shown`) that space folds them again."""
    if shown:
        return "space folds the statistics"
    return f"{n} statistics {'line' if n == 1 else 'lines'} · space to show"


def fleet_failed(failure: str) -> str:
    """Under `--fleet-require identical`: the fleet failed it, and why (`words/fleet.failure_line`)."""
    return f"fleet must be identical: failed: {failure}"


def fleet_group(number: int, replicas: int, settings: list[tuple[str, str]]) -> str:
    """An agreement group of the fleet: its number (from 1), its replicas, the launch settings
    its replicas share where the groups differ (name, value as shown)."""
    shared = ", ".join(f"{k} {v}" for k, v in settings)
    return f"group {number} ({replicas})" + (f": {shared}" if shared else "")


def probe_strip_label(helper: str, probes: int, last: float) -> str:
    """The monitor's label over a helper's k3 strip: the probes so far, the last avg_kl_div,
    and how to read the strip."""
    return (
        f"{helper} avg_kl_div along {probes} probe(s), last {last:.3g} "
        "(· bit-identical; a full non-finite bar: a probe error)"
    )
