"""`kltui check --stress` against real CPU SGLang 0.5.23 (issue 32): the background traffic
reaches the server and is counted (its own /metrics included, served with --enable-metrics),
the helpers' flushes still succeed between phases, and the reading never calls batch noise a
state bug: this server does not run deterministic inference, so the paired test decides, and
at 4 samples it says inconclusive rather than guess.

Seen here on 2026-12-02 (docs/FIELD_NOTES.md section 9): under the light level, SGLang 0.5.23
answered match's scoring prefill (max_new_tokens=0) with one output_token_logprobs entry and no
output token ("answer 0 has 0 output tokens but 1 output_token_logprobs"); kltui reports that
as a one-line fatal Problem of that helper and phase, and the reading leaves the helper out of
the comparison (inconclusive) instead of scoring a malformed answer or calling it a state bug."""

from __future__ import annotations

import asyncio

from kltui.readings.stress import StressVerdict
from kltui.run.driver import RunDriver
from kltui.session.store import SessionStore
from kltui.words.stress import helper_line

from .test_sglang_real import small_config


class _Keep:
    def __init__(self) -> None:
        self.outcomes = []

    def start_run(self, run_no: int) -> SessionStore:
        return SessionStore()

    def event(self, ev) -> None:
        pass

    def run_ended(self, outcome) -> None:
        self.outcomes.append(outcome)

    def retrying(self, seconds, attempt) -> None:
        pass


def test_stress_on_real_sglang(sglang_url):
    url = sglang_url  # served with --enable-metrics (conftest.SGLANG_DEFAULT_FLAGS)
    cfg = small_config(url, stress="light")
    view = _Keep()
    asyncio.run(RunDriver(cfg).session(view))
    quiet, loud = view.outcomes
    assert quiet.verdict == "pass" and quiet.stress is None
    for p in loud.store.problems:  # a malformed answer under load is one line, never a crash
        assert "\n" not in p.message and (not p.fatal or p.phase), p
    r = loud.stress
    assert r is not None
    (traffic,) = r.traffic.values()
    assert traffic["sent"] > 0 and traffic["completed"] > 0
    counts = r.server_counts[next(iter(r.traffic))]
    assert counts is not None and "retractions" in counts  # SGLang's own counter, read
    deterministic = loud.store.identity(url).enable_deterministic_inference is True
    assert r.helpers
    for h in r.helpers:
        assert h.deterministic == deterministic
        if h.compared == 0:  # the helper broke under load (see above): not compared
            assert h.verdict is StressVerdict.INCONCLUSIVE
        elif deterministic:  # where it holds, quiet and stressed must be the same bits
            assert h.verdict is StressVerdict.IDENTICAL, helper_line(h)
        else:  # else the paired test, which 4 samples cannot satisfy
            assert h.paired is not None and h.verdict is StressVerdict.INCONCLUSIVE, helper_line(h)
    assert not r.state_bug
    # what the traffic never reached is named from SGLang's own counters, never guessed
    missed = r.not_exercised().get(next(iter(r.traffic)), [])
    assert ("retraction" in missed) == (not counts.get("retractions"))
    evicted = counts.get("evicted_tokens") or traffic.get("evictions_observed")
    assert ("eviction" in missed) == (not evicted)
