"""A multiturn reading (readings/multiturn.py) as text: the turn names, each turn's hit against
SGLang's assert, which turns diverge and from where, and the remainder test. No decision is
taken here."""

from __future__ import annotations

from kltui import fmt
from kltui.metrics.turn_hits import HitExpectation
from kltui.readings.multiturn import (
    HitKind,
    MultiturnReading,
    Quantity,
    RemainderKind,
    Remainders,
    TurnRow,
)

SHOWN = 6  # turns named in one line before "and N more"


def turn_name(r: TurnRow) -> str:
    """g0b1 turn 2: the conversation as the kit numbers it, then the turn."""
    return f"{r.place.label} turn {r.place.turn}"


def expected_text(e: HitExpectation | None) -> str:
    """What the rule accepts: 'one of 140, 143, 144' or 'in [64, 128]' or '>= 96'."""
    if e is None:
        return "no rule recorded"
    if e.allowed:
        return (
            str(e.allowed[0]) if len(e.allowed) == 1 else "one of " + ", ".join(map(str, e.allowed))
        )
    if e.high is None:
        return f">= {e.low}"
    return f"in [{e.low}, {e.high}]"


HIT_WORDS = {
    HitKind.AS_ASSERTED: "as asserted",
    HitKind.SHORT: "short",
    HitKind.OFF: "not as asserted",
    HitKind.UNKNOWN: "no rule",
}


def hit_text(r: TurnRow) -> str:
    """cached 140, expected one of 140, 143, 144 (as asserted)."""
    return (
        f"cached {r.place.cached_tokens}, expected {expected_text(r.expected)} ({HIT_WORDS[r.hit]})"
    )


def _names(rows: tuple[TurnRow, ...], where: bool = False) -> str:
    def one(r: TurnRow) -> str:
        if where and r.first_divergence is not None:
            return f"{turn_name(r)} (from position {r.first_divergence})"
        return turn_name(r)

    text = ", ".join(one(r) for r in rows[:SHOWN])
    return text + (f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else "")


def divergence_line(m: MultiturnReading) -> str:
    """Which turns diverge, and from which generated position."""
    bad = m.divergent
    if not bad:
        return f"multiturn: none of {len(m.rows)} turns diverges"
    gate = "any difference" if m.gate <= 0 else f"mean k3 above {fmt.sci(m.gate)}"
    return (
        f"multiturn: {len(bad)} of {len(m.rows)} turns diverge ({gate}): {_names(bad, where=True)}"
    )


def hits_line(m: MultiturnReading) -> str:
    """Whether every turn's hit is as SGLang asserts it; the short ones with their values."""
    short = m.short
    if not short:
        return f"multiturn: every hit as SGLang asserts it ({len(m.rows)} turns)"
    shown = "; ".join(f"{turn_name(r)}: {hit_text(r)}" for r in short[:SHOWN])
    more = f"; and {len(short) - SHOWN} more" if len(short) > SHOWN else ""
    return f"multiturn: {len(short)} of {len(m.rows)} hits not as asserted: {shown}{more}"


def remainder_line(rem: Remainders) -> str:
    """The remainder test's result."""
    if rem.kind is RemainderKind.NO_DIVERGENCE:
        return "multiturn: no divergent turn, no remainder to compare"
    if rem.kind is RemainderKind.ALL_DIVERGENT:
        return (
            "multiturn: every turn diverges at the turns that diverge: no clean turn to compare "
            "remainders with (noise every turn shares, or a bug on every hit)"
        )
    tried = ", ".join(map(str, rem.moduli))
    if rem.kind is RemainderKind.SHARED:
        return (
            f"multiturn: the divergent turns share hit-length remainders with the clean ones "
            f"(mod {tried}): nothing ties the divergence to where a hit ends"
        )
    f = rem.found[0]
    also = ", ".join(f"mod {s.modulus}" for s in rem.found[1:4] if s.quantity == f.quantity)
    return (
        f"multiturn: the divergent turns' {f.quantity} mod {f.modulus} is "
        f"{_set(f.divergent)}, the clean turns' {_set(f.clean)}: the divergence follows where "
        f"{_WHERE[f.quantity]}" + (f" (also {also})" if also else "")
    )


_WHERE = {
    Quantity.CACHED_TOKENS: "the hit ends",
    Quantity.HISTORY: "the turn's input ends (where its prefill stopped and decode began)",
}


def _set(values: tuple[int, ...]) -> str:
    return "{" + ", ".join(map(str, values)) + "}"


def turn_avg_line(m: MultiturnReading) -> str:
    """avg_kl_div per turn; the last is what SGLang's kit reports (it replays only that)."""
    parts = [f"turn {t}: {fmt.sci(v)}" for t, v in enumerate(m.turn_avg)]
    return "multiturn: avg_kl_div per turn " + ", ".join(parts) + " (the last: SGLang's figure)"


def reading_lines(m: MultiturnReading) -> list[str]:
    """Every line of a multiturn reading, in the order the console prints them."""
    return [divergence_line(m), hits_line(m), remainder_line(m.remainders), turn_avg_line(m)]
