"""What changed between probes of `kltui monitor` (readings/probe_changes), on readings built by
hand, against the monitor's memory of each server: a condition that appears names its samples
and paths, one that clears says what it is now, an inconclusive reading clears nothing, a
server that did not answer is compared after with its last reading (a restart that brings a
state bug in says "condition 2 appeared"), a new process is a change of its own, and a noisy
server's reading settles as condition 1 with its limit said once. Asserts on kinds and figures;
the words are tests/unit/words/test_probe_words.py's."""

from __future__ import annotations

from kltui.engines.identity import ServerIdentity
from kltui.readings.diagnosis_parts import Command, CommandKind
from kltui.readings.findings import Finding, Kind
from kltui.readings.limit import Limit
from kltui.readings.probe import ProbeError, ProbeReading, ServerProbe
from kltui.readings.probe_changes import (
    Change,
    ChangeKind,
    LimitKind,
    Memory,
    changes,
    remember,
    standings,
)
from kltui.readings.verdict import Diagnosis

URL = "http://127.0.0.1:30000"
PROCESS = {"url": URL, "startup_time": 100.0, "model_path": "/srv/models/tiny-llama"}


def reading(kind: Kind, finding: Finding, verdict: str = "pass", **kw) -> ProbeReading:
    identity = ServerIdentity.of(kw.pop("identity", PROCESS))
    s = ServerProbe(URL, "m", finding, kind, Diagnosis(URL, finding, None), (), verdict=verdict, identity=identity,
                    **kw)  # fmt: skip
    return ProbeReading(verdict, (s,))


EXACT = reading(Kind.EXACT, Finding.EXACT)
STATE = reading(
    Kind.TWO, Finding.STATE_BUG, "fail", state_paths=("prefill_cache_hit",), state_samples=(7, 12)
)
GONE = ProbeReading("error", (), (ProbeError.UNREACHABLE,))


def after(*readings: ProbeReading) -> Memory:
    memory: Memory = {}
    for n, r in enumerate(readings, 1):
        memory = remember(memory, r, n)
    return memory


def test_condition_2_appearing_names_its_samples_paths_and_the_probe_it_is_against():
    got = changes(after(EXACT), STATE)
    assert [c.kind for c in got] == [ChangeKind.VERDICT, ChangeKind.APPEARED]
    assert all(c.server == URL and c.since == 1 for c in got)  # the verdict's too
    c = got[1]
    assert (c.before, c.after, c.samples, c.paths) == (
        "exact",
        "2",
        (7, 12),
        ("prefill_cache_hit",),
    )


def test_a_condition_that_clears_and_one_added_to_another():
    one = reading(Kind.ONE, Finding.BATCH_VARIANCE, "fail")
    both = reading(Kind.BOTH, Finding.BOTH, "fail", state_paths=("decode_cache_hit",))
    (appeared,) = changes(after(one), both)
    assert appeared.kind == ChangeKind.APPEARED and appeared.paths == ("decode_cache_hit",)
    assert [c.kind for c in changes(after(both), one)] == [ChangeKind.CLEARED]
    cleared = changes(after(STATE), EXACT)
    assert [c.kind for c in cleared] == [ChangeKind.VERDICT, ChangeKind.CLEARED]


def test_inconclusive_clears_nothing_and_the_same_reading_is_no_change():
    unclear = reading(Kind.UNKNOWN, Finding.STATE_UNCLEAR, "fail")
    (c,) = changes(after(STATE), unclear)
    assert c.kind == ChangeKind.FINDING and (c.before, c.after) == (
        Finding.STATE_BUG,
        Finding.STATE_UNCLEAR,
    )
    assert changes(after(STATE), STATE) == [] and changes(after(EXACT), EXACT) == []
    stray = reading(Kind.EXACT, Finding.STRAY_ULPS)
    assert [c.kind for c in changes(after(EXACT), stray)] == [ChangeKind.FINDING]


def test_a_server_that_did_not_answer_changes_its_verdict_with_its_server_named():
    assert changes(after(STATE), GONE) == [
        Change(URL, ChangeKind.VERDICT, "fail", "error", since=1)
    ]
    assert changes(after(STATE, GONE), GONE) == []  # still down: nothing new


def test_a_restart_that_brings_a_state_bug_in_is_replaced_verdict_and_condition_2_appeared():
    restarted = {**PROCESS, "startup_time": 250.0, "kltui_fault": "stale-prefix"}
    bug = reading(Kind.TWO, Finding.STATE_BUG, "fail", identity=restarted,
                  state_paths=("prefill_cache_hit",), state_samples=(0,))  # fmt: skip
    got = changes(after(EXACT, GONE), bug)
    kinds = [c.kind for c in got]
    assert kinds == [ChangeKind.REPLACED, ChangeKind.VERDICT, ChangeKind.APPEARED]
    replaced, verdict, appeared = got
    assert {k for k, _, _ in replaced.settings} == {"startup_time"}  # kltui_fault: new key
    assert (verdict.before, verdict.after) == ("error", "fail")
    assert appeared.since == 1 and (appeared.before, appeared.after) == ("exact", "2")


def test_the_same_process_is_no_replacement_and_a_server_without_startup_time_claims_none():
    assert changes(after(EXACT), EXACT) == []
    bare = {"url": URL}
    assert changes(after(reading(Kind.EXACT, Finding.EXACT, identity=bare)), EXACT) == []
    # a value one read did not compute (the local weights' hash in a probe with errors, seen
    # on the reference server) is no evidence of another process
    hashed = reading(Kind.EXACT, Finding.EXACT, identity={**PROCESS, "local_weights_sha256": "ab"})
    unhashed = reading(
        Kind.EXACT, Finding.EXACT, identity={**PROCESS, "local_weights_sha256": None}
    )
    assert changes(after(hashed), unhashed) == [] and changes(after(unhashed), hashed) == []


RERUN = Command(CommandKind.RERUN, URL, samples=32)
LIMITS_OPEN = (Limit("prefill_cache_hit", 8, None),)
LIMITS_MET = (Limit("prefill_cache_hit", 32, 6),)


def test_a_noisy_probe_too_small_to_exclude_a_state_bug_settles_as_condition_1_said_once():
    noisy = reading(Kind.ONE, Finding.NOT_EXCLUDED, limits=LIMITS_OPEN, next_command=RERUN)
    (said,) = standings({}, noisy)
    assert (said.kind, said.limit, said.next_command) == (Kind.ONE, LimitKind.NOT_EXCLUDED,
                                                          RERUN)  # fmt: skip
    assert standings(after(noisy), noisy) == []  # said once
    # an inconclusive probe between two settled ones does not make it said again
    unclear = reading(Kind.UNKNOWN, Finding.FEW_FAR_ABOVE)
    assert standings(after(noisy, unclear), noisy) == []
    # the same conditions with another condition-1 finding are no change of reading
    batch = reading(Kind.ONE, Finding.BATCH_VARIANCE, limits=LIMITS_MET)
    assert changes(after(noisy), batch) == [] and changes(after(batch), noisy) == []
    # after a state bug came and went, the settled reading is said again
    assert [s.limit for s in standings(after(noisy, STATE), batch)] == [LimitKind.EXCLUDED]


def test_what_a_settled_reading_rules_out_by_its_limits():
    assert standings({}, reading(Kind.EXACT, Finding.EXACT))[0].limit == LimitKind.NOT_TESTED
    met = reading(Kind.EXACT, Finding.EXACT, limits=(Limit("prefill_cache_hit", 8, 2, 0.0),))
    assert standings({}, met)[0].limit == LimitKind.EXCLUDED
    assert standings({}, STATE) == []  # a state bug is said by its change, not as settled


def test_the_model_label_is_a_name_never_a_path():
    assert ServerIdentity.of(PROCESS).model_name == "tiny-llama"
    served = {**PROCESS, "served_model_name": "tiny"}
    assert ServerIdentity.of(served).model_name == "tiny"
    same = {**PROCESS, "served_model_name": PROCESS["model_path"]}  # SGLang's default
    assert ServerIdentity.of(same).model_name == "tiny-llama"
    assert ServerIdentity.of({"model_path": "Qwen/Qwen3-8B/"}).model_name == "Qwen3-8B"
    assert ServerIdentity().model_name == ""
