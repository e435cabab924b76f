"""The stored snapshots show k3 of rounding-level differences to three digits, which the last
bit of exp decides: tests/conftest.py keeps numpy off its AVX-512 exp so that every machine
draws the same digits. This checks that it took (numpy was not loaded before the conftest)."""

from __future__ import annotations

import math

import numpy as np


def test_numpy_exp_is_libms_exp_in_the_test_process():
    # r of the size the snapshots' k3 values come from; ~5% of these differ in the last bit
    # under numpy's AVX-512 float64 exp
    x = np.random.default_rng(0).normal(0.0, 1e-3, 20000)
    libm = np.array([math.exp(v) for v in x])
    assert int((np.exp(x) != libm).sum()) == 0
