"""HelperView answers every view's "the summary's value, else the live value" once: live state
until HelperFinished, the summary's figures after, and the helper's own figures without
`Summary.raw`."""

from __future__ import annotations

import numpy as np

from kltui.metrics.presets import ThresholdSource
from kltui.metrics.summary import Summary
from kltui.session.events import HelperFinished, HelperStarted, PhaseChanged, SampleScored
from kltui.session.helper_view import HelperView
from kltui.session.store import SessionStore

URL = "http://127.0.0.1:1"


def _running() -> SessionStore:
    store = SessionStore()
    src = ThresholdSource("flag").to_dict()
    store.apply(HelperStarted("match", URL, 4, 0.5, 1e-3, threshold_source=src))
    store.apply(PhaseChanged("match", URL, "score"))
    lp = np.array([-0.5, -1.0])
    store.apply(SampleScored("match", URL, 0, np.array([3, 4]), lp, lp, 0, 2))
    return store


def test_before_the_summary_the_live_state_answers():
    v = HelperView.of(_running().helpers[f"match@{URL}"])
    assert (v.finished, v.scored, v.samples, v.skipped) == (False, 1, 4, 0)
    assert (v.threshold, v.tail_threshold, v.status, v.result) == (0.5, 1e-3, "score", "incomplete")
    assert v.threshold_source == ThresholdSource("flag") and v.seconds is None


def test_a_live_summary_answers_before_the_state():
    st = _running().helpers[f"match@{URL}"]
    v = HelperView.of(st, Summary.of({"scored": 3, "samples": 4, "live": True}))
    assert (v.scored, v.samples, v.finished) == (3, 4, False)


def test_after_the_summary_it_answers_with_the_helpers_own_figures():
    store = _running()
    summary = {"status": "fail", "scored": 2, "samples": 4, "skipped": 2, "top1_agreement": 0.9}
    store.apply(HelperFinished("match", URL, summary, at=None))
    v = HelperView.of(store.helpers[f"match@{URL}"])
    assert (v.finished, v.scored, v.skipped, v.status, v.result) == (True, 2, 2, "fail", "fail")
    assert v.threshold == 0.5  # from HelperStarted: the summary no longer carries it
    assert dict(v.figures) == {"top1_agreement": 0.9}
    assert v.reported(("status", "avg_kl_div")) == {"status": "fail"}
    assert v.seconds is not None


def _decoding(times: list[float], chunk: int = 4) -> tuple[SessionStore, HelperView]:
    """A helper of 2 samples x 100 new tokens whose decode streams `chunk` tokens per sample
    at each of `times` (the store's clock)."""
    from kltui.session.events import TokensDecoded

    now = [0.0]
    store = SessionStore(clock=lambda: now[0])
    store.apply(HelperStarted("match", URL, 2, 0.5, 1e-3, {"max_new_tokens": 100}, at=0.0))
    store.apply(PhaseChanged("match", URL, "decode"))
    for i, t in enumerate(times):
        now[0] = t
        ids = np.arange(chunk)
        for sample in (0, 1):
            lp = np.zeros(chunk)
            store.apply(TokensDecoded("match", URL, sample, i * chunk, ids, lp))
    return store, HelperView.of(store.helpers[f"match@{URL}"])


def test_the_decode_rate_and_eta_come_from_the_streamed_tokens():
    # issue 59: minutes of "waiting for the first scored sample" with no estimate
    _, first = _decoding([10.0])
    assert first.decode_rate is None and first.decode_eta is None  # one instant: no pace yet
    store, v = _decoding([10.0, 11.0, 12.0])
    # 24 tokens; the first event (4 tokens at t=10) starts the clock: 20 more in 2 s
    assert v.decoded == 24 and v.decode_rate == 10.0
    assert v.decode_eta == (200 - 24) / 10.0
    store.apply(PhaseChanged("match", URL, "prefill"))
    assert v.decode_eta is None and v.decode_rate == 10.0  # the decode is over: no ETA
