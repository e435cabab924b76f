"""What changed between two probes of `kltui monitor` (readings/probe.changes), on readings
built by hand: a condition that appears names its samples and paths, one that clears says what
it is now, an inconclusive reading clears nothing, and the words say it as the console does."""

from __future__ import annotations

import time

from kltui.readings.findings import Finding, Kind
from kltui.readings.probe import (
    Change,
    ChangeKind,
    ProbeError,
    ProbeReading,
    ServerProbe,
    changes,
)
from kltui.readings.probe_words import change_words, error_words
from kltui.readings.verdict import Diagnosis

URL = "http://127.0.0.1:30000"


def reading(kind: Kind, finding: Finding, verdict: str = "pass", **kw) -> ProbeReading:
    s = ServerProbe(URL, "m", finding, kind, Diagnosis(URL, finding, None), (), **kw)
    return ProbeReading(verdict, (s,))


EXACT = reading(Kind.EXACT, Finding.EXACT)
STATE = reading(
    Kind.TWO, Finding.STATE_BUG, "fail", state_paths=("prefill_cache_hit",), state_samples=(7, 12)
)


def test_condition_2_appearing_names_its_samples_and_paths():
    got = changes(EXACT, STATE)
    kinds = [c.kind for c in got]
    assert kinds == [ChangeKind.VERDICT, ChangeKind.APPEARED]
    c = got[1]
    assert (c.before, c.after, c.samples, c.paths) == (
        "exact",
        "2",
        (7, 12),
        ("prefill_cache_hit",),
    )
    at = time.mktime((2026, 12, 4, 14, 2, 0, 0, 0, -1))
    assert change_words(c, at) == (
        f"condition 2 appeared at 14:02:00 on {URL}, first in sample 7 "
        "(prefill_cache_hit; samples #7, #12)"
    )


def test_a_condition_that_clears_and_one_added_to_another():
    one = reading(Kind.ONE, Finding.BATCH_VARIANCE, "fail")
    both = reading(Kind.BOTH, Finding.BOTH, "fail", state_paths=("decode_cache_hit",))
    (appeared,) = changes(one, both)
    assert appeared.kind == ChangeKind.APPEARED and appeared.paths == ("decode_cache_hit",)
    assert change_words(appeared, 0).startswith("condition 2 appeared")
    kinds = [c.kind for c in changes(both, one)]
    assert kinds == [ChangeKind.CLEARED]
    assert change_words(changes(STATE, EXACT)[1], 0).startswith("condition 2 cleared")


def test_batch_variance_appearing_names_no_samples():
    one = reading(Kind.ONE, Finding.BATCH_VARIANCE, "fail")
    c = changes(EXACT, one)[-1]
    assert c.kind == ChangeKind.APPEARED and c.samples == () and c.paths == ()
    assert change_words(c, 0).startswith("condition 1 appeared")


def test_inconclusive_clears_nothing_and_the_same_reading_is_no_change():
    unclear = reading(Kind.UNKNOWN, Finding.STATE_UNCLEAR, "fail")
    (c,) = [c for c in changes(STATE, unclear) if c.server]
    assert c.kind == ChangeKind.FINDING and (c.before, c.after) == ("state bug", "state unclear")
    assert changes(STATE, STATE) == [] and changes(EXACT, EXACT) == []
    stray = reading(Kind.EXACT, Finding.STRAY_ULPS)
    assert [c.kind for c in changes(EXACT, stray)] == [ChangeKind.FINDING]


def test_a_server_missing_from_a_probe_is_no_change_of_reading():
    gone = ProbeReading("error", (), (ProbeError.UNREACHABLE,))
    assert changes(STATE, gone) == [Change("", ChangeKind.VERDICT, "fail", "error")]
    assert not gone.measured and STATE.measured
    assert error_words(gone.errors) == "no server answered"
