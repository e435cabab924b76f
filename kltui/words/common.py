"""Small pieces of wording every diagnosis module shares."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kltui.readings.coverage import Untested
from kltui.readings.findings import Basis
from kltui.readings.geometry_parts import Crossed, Crossing
from kltui.readings.paired import (
    EVIDENCE_P,
    MIN_COMMON,
    MIN_RATIO,
    SPREAD_MIN,
    SPREAD_P,
    STRAY_ULP_FLOOR,
)
from kltui.words.coverage import untested_map

__all__ = [
    "EVIDENCE_P",
    "MIN_COMMON",
    "MIN_RATIO",
    "SPREAD_MIN",
    "SPREAD_P",
    "STRAY_ULP_FLOOR",
    "joined",
    "plural",
    "rests_on",
    "shown_ids",
    "tail",
    "uncrossed_tail",
    "untested_tail",
]


def plural(n: int) -> str:
    """The verb's "s" for one subject (`diverges`), none for several."""
    return "s" if n == 1 else ""


def joined(names: Sequence[str]) -> str:
    """ "a and b"."""
    return " and ".join(names)


def shown_ids(ids: Sequence[int]) -> str:
    """ "#3, #5 and 2 more": the first eight sample ids."""
    return ", ".join(f"#{i}" for i in ids[:8]) + (
        f" and {len(ids) - 8} more" if len(ids) > 8 else ""
    )


def rests_on(basis: Basis) -> str:
    """Which helpers and how many samples a verdict rests on, appended to its label."""
    parts = [f"{t.helper} {t.scored}/{t.samples}" for t in basis.tested]
    return f" [rests on {', '.join(parts)} samples scored]" if parts else ""


def untested_tail(why: Mapping[str, Untested]) -> str:
    """The helpers not tested, and why."""
    return "; ".join(f"{h} not tested ({w})" for h, w in untested_map(why).items())


def tail(basis: Basis) -> str:
    """What was not tested, what decoding never crossed of the state geometry, then what the
    verdict rests on: the end of a label."""
    t = untested_tail(basis.untested)
    return (f"; {t}" if t else "") + uncrossed_tail(basis.uncrossed) + rests_on(basis)


def uncrossed_tail(crossed: Sequence[Crossing]) -> str:
    """The label's words for boundaries no sample of a helper crossed."""
    out = []
    for b in (Crossed.TRACK, Crossed.WINDOW):
        mine = [c for c in crossed if c.boundary is b]
        if not mine:
            continue
        need = max(c.need or 0 for c in mine)
        what = (
            f"no sample crossed the {mine[0].step}-token track interval while decoding"
            if b is Crossed.TRACK
            else f"no sample generated past the {mine[0].step}-token sliding window"
        )
        out.append(f"{what} in {joined([c.helper for c in mine])} (--max-new-tokens {need} would)")
    return "".join(f"; {x}" for x in out)
