"""The words of a bitwise comparison (`readings/compare.py`): where two scorings of one helper
first differ, and a re-run's equality with the run before, or why it cannot be compared."""

from __future__ import annotations

from typing import Any

from kltui.engines.identity import shown_value
from kltui.readings.compare import BookDiff, DiffSide, NotComparable, RerunEquality


def first_difference(diff: BookDiff) -> str:
    """The first difference of a comparison, as words."""
    return first_difference_of(diff.to_dict(per_sample=False))


def _what(side: str) -> str:
    if side == DiffSide.IDS:
        return "generated token ids differ"
    if side == DiffSide.LENGTH:
        return "one side has fewer tokens"
    return f"{'prefill and decode' if side == DiffSide.BOTH else side} side"


def first_difference_of(d: dict) -> str:
    """'bit-identical' or 'differs at sample 3 @ 17 (decode side; max |Δ| ...)', from the
    dict form of a BookDiff (so reports of a recording and live views say the same)."""
    first = d.get("first_difference")
    if first is None:
        return "bit-identical" if d.get("identical") else "nothing to compare"
    return (
        f"differs at sample {first['sample']} @ {first['position']} ({_what(first['side'])}; "
        f"max |Δ| prefill {d['prefill_max_abs_delta']:.3g}, decode "
        f"{d['decode_max_abs_delta']:.3g})"
    )


def _change(key: str, a: Any, b: Any) -> str:
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return f"{key} changed"
    return f"{key} {shown_value(a)} → {shown_value(b)}"


def _replaced(eq: RerunEquality) -> str:
    run = eq.run
    between = f"run {run - 1} and {run}" if run > 1 else "the previous run and this one"
    parts = [
        f"server {url} replaced between {between} "
        f"({', '.join(_change(k, a, b) for k, (a, b) in changes.items())})"
        for url, changes in eq.replaced.items()
    ]
    return "; ".join(parts) + ": not comparable as run-to-run non-determinism"


def rerun_reason(eq: RerunEquality) -> str | None:
    """Why a re-run cannot be compared with the run before (None: it can), as the JSON's
    `reason` and the views say it."""
    match eq.why:
        case None:
            return None
        case NotComparable.HELPERS:
            return "the runs hold different helpers"
        case NotComparable.NO_HELPER:
            return "no helper ran"
        case NotComparable.SAMPLES:
            return f"{eq.helper}: the runs scored different samples"
    return _replaced(eq)


def rerun(eq: RerunEquality) -> str:
    """A re-run's comparison with the run before it, as words."""
    if eq.identical is None:
        # a replaced server's reason is a finding of its own, not a "not comparable (...)" aside
        reason = rerun_reason(eq)
        return (reason or "not comparable") if eq.replaced else f"not comparable ({reason})"
    if eq.identical:
        return "bit-identical (every token id and logprob)"
    w = eq.first_difference
    if w is None:  # not made by rerun_equality, which names where a difference starts
        return "differs"
    return f"{w.helper} {first_difference(eq.helpers[f'{w.helper}@{w.server}'])}"


def rerun_line(eq: RerunEquality, run_no: int) -> str:
    """`re-run 2 vs 1: bit-identical ...`, as the console and every report print it."""
    return f"re-run {run_no} vs {run_no - 1}: {rerun(eq)}"
