"""Recorded arrays: the narrowest code that keeps every bit, and old recordings still read."""

from __future__ import annotations

import numpy as np

from kltui.helpers.extras import MAX_WINDOW, PAD, windows
from kltui.metrics.k3 import k3, sample_metrics
from kltui.session.codec import array_in, array_out, decode, encode
from kltui.session.events import ExtrasFetched, HelperFinished, HelperStarted


def roundtrip(a: np.ndarray, kind: str) -> tuple[str, np.ndarray]:
    s = array_out(a, kind)
    return s.split(":", 1)[0], array_in(s, np.float64 if kind == "f" else np.int64)


def test_float32_values_take_four_bytes_and_come_back_bit_for_bit():
    a = np.array([-0.0, -1.5e-7, -3.25, -np.inf, np.float32(-0.1)], dtype=np.float32)
    code, back = roundtrip(a.astype(np.float64), "f")
    assert code == "f4"
    assert back.dtype == np.float64
    assert back.tobytes() == a.astype(np.float64).tobytes()  # -0.0 and -inf included


def test_a_value_float32_cannot_hold_keeps_the_array_in_eight_bytes():
    a = np.array([-0.5, -0.1], dtype=np.float64)  # 0.1 is not a float32 value
    code, back = roundtrip(a, "f")
    assert code == "f8" and back.tobytes() == a.tobytes()
    nan = np.array([np.nan, -1.0])
    code, back = roundtrip(nan, "f")
    assert np.isnan(back[0]) and back[1] == -1.0


def test_token_ids_take_the_narrowest_integer_code():
    for values, code in (([0, 1023], "i2"), ([5, 151_000], "i4"), ([2**40], "i8")):
        got, back = roundtrip(np.array(values, dtype=np.int64), "i")
        assert got == code and back.tolist() == values


def test_events_carry_their_time_and_old_recordings_read_as_unknown():
    ev = HelperStarted("match", "http://x", 4, 0.002, 1e-3)
    rec = encode(ev)
    assert isinstance(rec["at"], float)
    assert decode(rec).at == rec["at"]
    del rec["at"]
    assert decode(rec).at is None
    fin = decode({"type": "HelperFinished", "helper": "match", "server": "s", "summary": {}})
    assert isinstance(fin, HelperFinished) and fin.at is None


def test_extras_event_roundtrips():
    ev = ExtrasFetched(
        "match",
        "http://x",
        3,
        10,
        np.array([7, 8]),
        np.array([-0.5, -1.25]),
        [[[7, -0.5], [9, -1.0]], [[8, -1.25], [2, -2.0]]],
        texts=["a", "[b]"],
        alt_texts={"9": "nine"},
        reason="worst",
    )
    back = decode(encode(ev))
    assert back.top == ev.top and back.texts == ev.texts and back.alt_texts == ev.alt_texts
    assert back.token_ids.tolist() == [7, 8] and back.lp.tolist() == [-0.5, -1.25]


def _metrics(lp_a, lp_b):
    return sample_metrics(k3(lp_a, lp_b), lp_a, lp_b, 1e-3)


def test_extras_windows_cover_first_divergence_and_max_only():
    n = 300
    b = np.full(n, -1.0)
    a = b.copy()
    a[20] = -1.001  # first divergence
    a[250] = -1.5  # largest k3, far away: a window of its own
    m = _metrics(a, b)
    assert windows(m) == [(20 - PAD, 20 + PAD + 1), (250 - PAD, 250 + PAD + 1)]
    a2 = b.copy()
    a2[3], a2[30] = -1.001, -1.5  # close together: one window, clipped at 0
    assert windows(_metrics(a2, b)) == [(0, 30 + PAD + 1)]
    assert windows(_metrics(b, b)) == []  # bit-identical: nothing to look at
    assert 30 + PAD + 1 <= MAX_WINDOW
