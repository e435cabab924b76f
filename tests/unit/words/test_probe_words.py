"""The words of `kltui monitor` (words/probe.py), one golden text per kind: each change kind,
each settled reading's limit kind, each probe error. The readings are tested on their kinds in
tests/unit/readings/test_probe.py."""

from __future__ import annotations

import time

import pytest

from kltui.readings.diagnosis_parts import Command, CommandKind
from kltui.readings.findings import Finding, Kind
from kltui.readings.limit import Limit
from kltui.readings.probe import ProbeError, ServerProbe
from kltui.readings.probe_changes import Change, ChangeKind, LimitKind, Standing
from kltui.words.probe import change_short, change_words, error_words, finding_words, standing_words

URL = "http://127.0.0.1:30000"
AT = time.mktime((2026, 12, 4, 14, 2, 0, 0, 0, -1))

CHANGES = {
    ChangeKind.APPEARED: (
        Change(URL, ChangeKind.APPEARED, "exact", "2", (7, 12), ("prefill_cache_hit",), 3),
        f"condition 2 appeared at 14:02:00 on {URL}, first in sample 7 (prefill_cache_hit; "
        "samples #7, #12)",
        "condition 2 appeared, first in sample 7",
    ),
    ChangeKind.CLEARED: (
        Change(URL, ChangeKind.CLEARED, "1+2", "1", since=3),
        f"condition 2 cleared at 14:02:00 on {URL} (now 1)",
        "condition 2 cleared",
    ),
    ChangeKind.FINDING: (
        Change(URL, ChangeKind.FINDING, "exact", "stray ulps", since=3),
        f"reading exact -> stray ulps at 14:02:00 on {URL}",
        "exact -> stray ulps",
    ),
    ChangeKind.VERDICT: (
        Change(URL, ChangeKind.VERDICT, "error", "fail", since=3),
        f"verdict error -> fail at 14:02:00 on {URL}",
        "verdict error -> fail",
    ),
    ChangeKind.REPLACED: (
        Change(
            URL,
            ChangeKind.REPLACED,
            "",
            "",
            since=3,
            settings=(("startup_time", "100.0", "250.0"), ("kltui_fault", "none", "stale-prefix")),
        ),  # fmt: skip
        f"server replaced at 14:02:00 on {URL}: another process since probe 3 (startup_time, "
        "kltui_fault none -> stale-prefix)",
        "server replaced",
    ),
}


@pytest.mark.parametrize("kind", list(ChangeKind))
def test_each_change_kind_in_words(kind):
    change, line, short = CHANGES[kind]
    assert change_words(change, AT) == line
    assert change_short(change) == short


STANDINGS = {
    LimitKind.EXCLUDED: (
        Standing(
            URL,
            Kind.ONE,
            LimitKind.EXCLUDED,
            (Limit("prefill_cache_hit", 8, 6), Limit("decode_cache_hit", 8, 7)),
        ),  # fmt: skip
        f"condition 1 on {URL}; each probe rules out a state bug at >= x10 its noise in at least "
        "prefill_cache_hit 6 of 8, decode_cache_hit 7 of 8 samples (said once)",
    ),
    LimitKind.NOT_EXCLUDED: (
        Standing(
            URL,
            Kind.ONE,
            LimitKind.NOT_EXCLUDED,
            (Limit("prefill_cache_hit", 8, None),),
            Command(CommandKind.RERUN, URL, samples=128),
        ),  # fmt: skip
        f"condition 1 on {URL}; a probe of 8 samples is too small to rule out a state bug on "
        "prefill_cache_hit: read as condition 1 from here on (said once); for a limit: "
        "kltui check --server 127.0.0.1:30000 --samples 128",
    ),
    LimitKind.NOT_TESTED: (
        Standing(URL, Kind.EXACT, LimitKind.NOT_TESTED, ()),
        f"exact on {URL}; no cache path compared: condition 2 not tested",
    ),
}


@pytest.mark.parametrize("kind", list(LimitKind))
def test_each_settled_reading_in_words(kind):
    standing, line = STANDINGS[kind]
    assert standing_words(standing) == line


def test_an_exact_reading_rules_out_a_state_bug_that_makes_samples_differ():
    s = Standing(URL, Kind.EXACT, LimitKind.EXCLUDED, (Limit("prefill_cache_hit", 8, 2, 0.0),))
    assert standing_words(s) == (
        f"exact on {URL}; each probe rules out a state bug making samples differ in at least "
        "prefill_cache_hit 2 of 8 samples (said once)"
    )


def test_each_probe_error_in_words():
    said = {e: error_words((e,)) for e in ProbeError}
    assert said == {
        ProbeError.UNREACHABLE: "no server answered",
        ProbeError.HELPER: "a helper ended in error",
        ProbeError.SERVER: "a server failed mid-probe",
        ProbeError.TIMEOUT: "cut short at --probe-timeout",
        ProbeError.INTERNAL: "kltui failed",
    }


def test_the_settled_finding_reads_condition_1_in_a_probe_line():
    s = ServerProbe(URL, "m", Finding.NOT_EXCLUDED, Kind.ONE, "", ())
    assert finding_words(s) == "condition 1"
    assert finding_words(ServerProbe(URL, "m", Finding.STATE_BUG, Kind.TWO, "", ())) == "state bug"
