"""One golden text per kind of the multiturn reading (words/multiturn.py)."""

from __future__ import annotations

from kltui.metrics.turn_hits import HitExpectation, HitRule, decode_dense, prefill_exact
from kltui.readings.multiturn import (
    HitKind,
    MultiturnReading,
    Quantity,
    RemainderKind,
    Remainders,
    Separation,
    TurnRow,
)
from kltui.session.turns import TurnPlace
from kltui.words.multiturn import (
    divergence_line,
    expected_text,
    hit_text,
    hits_line,
    remainder_line,
    turn_avg_line,
)


def row(g, b, t, cached, e, hit=HitKind.AS_ASSERTED, k3=0.0, first=None) -> TurnRow:
    place = TurnPlace(g, b, t, cached, 200, e)
    return TurnRow(3 * (2 * g + b) + t, place, hit, 16, k3, k3 * 4, first, k3 > 0)


NONE = Remainders(RemainderKind.NO_DIVERGENCE, moduli=(4, 2))


def reading(rows, rem=NONE):
    return MultiturnReading(tuple(rows), rem, (0.0, 1.5e-3), 1e-9)


def test_expected_and_hit_texts():
    assert expected_text(prefill_exact(512)) == "512"
    assert expected_text(decode_dense(100, 20, 16)) == "one of 112, 119, 120"
    assert expected_text(HitExpectation(HitRule.DECODE_MAMBA, low=96)) == ">= 96"
    assert expected_text(HitExpectation(HitRule.PREFILL_MAMBA, low=0, high=64)) == "in [0, 64]"
    assert expected_text(None) == "no rule recorded"
    r = row(0, 1, 2, 140, decode_dense(100, 44, 4))
    assert hit_text(r) == "cached 140, expected one of 140, 143, 144 (as asserted)"
    short = row(1, 0, 0, 448, prefill_exact(512), HitKind.SHORT)
    assert hit_text(short) == "cached 448, expected 512 (short)"


def test_divergence_and_hits_lines():
    ok = row(0, 0, 1, 140, decode_dense(100, 44, 4))
    bad = row(0, 1, 2, 140, decode_dense(100, 44, 4), HitKind.OFF, 2e-3, 2)
    assert divergence_line(reading([ok])) == "multiturn: none of 1 turns diverges"
    assert divergence_line(reading([ok, bad])) == (
        "multiturn: 1 of 2 turns diverge (mean k3 above 1.000e-09): g0b1 turn 2 (from position 2)"
    )
    ungated = MultiturnReading((ok, bad), Remainders(RemainderKind.NO_DIVERGENCE), (), 0.0)
    assert divergence_line(ungated) == (
        "multiturn: 1 of 2 turns diverge (any difference): g0b1 turn 2 (from position 2)"
    )
    assert hits_line(reading([ok])) == "multiturn: every hit as SGLang asserts it (1 turns)"
    assert hits_line(reading([ok, bad])) == (
        "multiturn: 1 of 2 hits not as asserted: g0b1 turn 2: cached 140, expected one of 140, "
        "143, 144 (not as asserted)"
    )
    assert turn_avg_line(reading([ok])) == (
        "multiturn: avg_kl_div per turn turn 0: 0, turn 1: 1.500e-03 (the last: SGLang's figure)"
    )


def test_remainder_lines():
    assert remainder_line(Remainders(RemainderKind.NO_DIVERGENCE)) == (
        "multiturn: no divergent turn, no remainder to compare"
    )
    assert remainder_line(Remainders(RemainderKind.ALL_DIVERGENT)) == (
        "multiturn: every turn diverges at the turns that diverge: no clean turn to compare "
        "remainders with (noise every turn shares, or a bug on every hit)"
    )
    assert remainder_line(Remainders(RemainderKind.SHARED, moduli=(4, 2, 8))) == (
        "multiturn: the divergent turns share hit-length remainders with the clean ones "
        "(mod 4, 2, 8): nothing ties the divergence to where a hit ends"
    )
    found = (
        Separation(Quantity.CACHED_TOKENS, 16, (4, 8, 12), (0,)),
        Separation(Quantity.CACHED_TOKENS, 32, (4, 8, 12), (16,)),
    )
    assert remainder_line(Remainders(RemainderKind.SEPARATES, found, (4, 16, 32))) == (
        "multiturn: the divergent turns' cached_tokens mod 16 is {4, 8, 12}, the clean turns' "
        "{0}: the divergence follows where the hit ends (also mod 32)"
    )
    history = (Separation(Quantity.HISTORY, 4, (1, 2, 3), (0,)),)
    assert remainder_line(Remainders(RemainderKind.SEPARATES, history, (4,))) == (
        "multiturn: the divergent turns' history mod 4 is {1, 2, 3}, the clean turns' {0}: the "
        "divergence follows where the turn's input ends (where its prefill stopped and decode "
        "began)"
    )
