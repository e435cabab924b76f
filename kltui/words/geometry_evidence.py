"""The words of the evidence a state geometry adds (`readings/geometry_parts.py`): remainders
against the chunk and the track interval, what each hit restored, where divergence starts
against the window handoff and the checkpoints, what decoding crossed, a divergence past the
window, and a MoE model's routing."""

from __future__ import annotations

from kltui.fmt import sci
from kltui.readings.diagnosis_parts import Line
from kltui.readings.geometry_parts import (
    Boundary,
    Crossed,
    Crossing,
    Handoff,
    Residues,
    Restored,
    RestoreKind,
    Routing,
    TopFlips,
    WindowSplit,
)
from kltui.words.common import EVIDENCE_P, shown_ids


def _set(vals: tuple[int, ...]) -> str:
    return "{" + ", ".join(map(str, vals[:8])) + (" …" if len(vals) > 8 else "") + "}"


def residues_line(r: Residues) -> str:
    """prompt_len % the chunk or the track interval, divergent against passing."""
    apart = "" if set(r.divergent) & set(r.passing) else ": no remainder in common"
    return (
        f"{r.helper}: prompt_len % {r.step} (the {r.modulus}): divergent {_set(r.divergent)}, "
        f"passing {_set(r.passing)}{apart}"
    )


_RESTORE = {
    RestoreKind.NOTHING: "nothing",
    RestoreKind.PREFILL_CHUNK: "a prefill chunk boundary",
    RestoreKind.DECODE_TRACK: "a decode checkpoint",
    RestoreKind.OFF_GRID: "a position off the checkpoint grid",
}


def _restores(counts: tuple[tuple[RestoreKind, int], ...]) -> str:
    return ", ".join(f"{n} {_RESTORE[k]}" for k, n in counts) or "none"


def restored_line(r: Restored) -> str:
    """What the hits of the divergent and the passing samples restored."""
    grid = []
    if r.chunk:
        grid.append(f"prefill every {r.chunk} tokens")
    if r.track:
        grid.append(f"decode every {r.track}")
    return (
        f"{r.helper}: what each hit restored (cached_tokens against the checkpoints: "
        f"{', '.join(grid)}): divergent {_restores(r.divergent)}; passing "
        f"{_restores(r.passing)}"
    )


_WHERE = {
    Boundary.FIRST: "from the first generated token",
    Boundary.WINDOW: "from the first token past the {window}-token window",
    Boundary.TRACK: "from the first token past a {track}-token track boundary",
    Boundary.ELSEWHERE: "elsewhere",
}
_POINTS = {
    Boundary.FIRST: "the restore (the state decoding started from)",
    Boundary.WINDOW: "the window handoff (the window's eviction), not the restore",
    Boundary.TRACK: "a checkpoint rotation during decode",
}


def handoff_line(h: Handoff) -> str:
    """Where the divergent samples start, against the window handoff and the checkpoints."""
    parts = [
        f"{n} of {h.n} diverge{'s' if n == 1 else ''} "
        + _WHERE[b].format(window=h.window, track=h.track)
        for b, n in h.counts
    ]
    top, n = h.counts[0]
    point = f": {_POINTS[top]}" if top in _POINTS and n * 2 > h.n else ""
    return f"{h.helper}: {'; '.join(parts)}{point}"


def crossing_line(c: Crossing) -> str:
    """How many samples crossed a boundary of the geometry while decoding."""
    if c.boundary is Crossed.TRACK:
        what = f"crossed a {c.step}-token track-interval boundary while decoding"
    else:
        what = f"generated past the {c.step}-token sliding window"
    more = (
        ""
        if c.need is None
        else f" (--max-new-tokens {c.need} would take every one past it)"
        if c.crossed
        else f": never exercised (--max-new-tokens {c.need} would)"
    )
    return f"{c.helper}: {c.crossed} of {c.n} samples {what}{more}"


def window_split_line(w: WindowSplit) -> str:
    """match's divergence confined to the samples whose decode passed the window."""
    k, n = len(w.differing), len(w.passed)
    which = "exactly those differ" if k == n else f"{k} of those differ"
    return (
        f"{w.helper}: its decode passed the {w.window}-token sliding window in {n} of "
        f"{n + w.within} samples and {which} ({shown_ids(w.differing)}); the {w.within} that "
        "stayed within it are bit-identical: noise shared by every path would put every "
        f"difference there with chance p={w.p_samples:.2g}, and start each at or after its "
        f"window handoff with chance p={w.p_position:.2g} (a state bug needs both "
        f"p<{EVIDENCE_P:g})"
    )


def routing_line(r: Routing) -> str:
    """What a MoE model's routing does to single tokens, and the top-1 flips measured."""
    top = "" if r.top_k is None else f", top-{r.top_k}"
    return (
        f"MoE ({r.experts} experts{top}): a router's small logits difference can flip an "
        "expert and become nats on a single token, so read the top-1 flips and the tail beside "
        f"the mean: {r.helper} max k3 {sci(r.max_k3)} against avg_kl_div {sci(r.level)}, "
        f"{r.n_tail} tokens above the tail threshold{_flips(r.flips)}; a dense model's "
        "threshold does not carry over"
    )


def _flips(f: TopFlips | None) -> str:
    if f is None:
        return ""
    tail = (
        f", {f.tail_flips} of the {f.tail_positions} above the tail threshold"
        if f.tail_positions
        else ""
    )
    return (
        f"; top-1 flips (the prefill's top-1 is not the token the decode chose) at {f.flips} of "
        f"{f.positions} positions in the drill-down windows of {f.samples} samples{tail}"
    )


def line(e: Line) -> str | None:
    """A geometry record's line (None: not a geometry record)."""
    match e:
        case Residues():
            return residues_line(e)
        case Restored():
            return restored_line(e)
        case Handoff():
            return handoff_line(e)
        case Crossing():
            return crossing_line(e)
        case WindowSplit():
            return window_split_line(e)
        case Routing():
            return routing_line(e)
    return None
