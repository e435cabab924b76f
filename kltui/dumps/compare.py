"""Bit equality and max |diff| of aligned rows. Equality is on the bits, because the claim being
checked is "bit-identical", with one exception: +0.0 and -0.0 count as equal (the same value;
which sign a zero gets can follow the order of a sum without changing any later result). A NaN
equals a NaN with the same bits (same payload) at the same place on both sides, since both paths
then produced the same word; a NaN with another payload, or against a number, differs (max
|diff| nan). DUMPS.md says so, and so does the printed analysis."""

from __future__ import annotations

import math
from dataclasses import dataclass

# how equality is decided, as the printed analysis and its verdict say it
EQUALITY = "bit-equal, +0.0 and -0.0 counted equal, a NaN equal only to the same NaN bits"

_INT_OF_SIZE = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}


@dataclass
class RowDiff:
    """How two tensors' rows differ: identical or not, the largest difference and where."""

    identical: bool
    max_abs_diff: float  # 0.0 when identical; nan/inf when a side holds them
    position: int | None  # position of the worst row (first differing row when all tie)
    first_position: int | None  # first position whose row differs
    rows: int


def _bits(torch, t):
    return t.view(getattr(torch, _INT_OF_SIZE[t.element_size()]))


def _real(torch, t):
    """A float view of `t` (a complex tensor's real and imaginary parts as a last dim)."""
    t = t.contiguous()
    return torch.view_as_real(t).contiguous() if t.is_complex() else t


def diff_rows(torch, a, b, positions: list[int], what: str) -> RowDiff:
    """`a` and `b` hold the same positions in the same order along dim 0."""
    from kltui.dumps.files import DumpError

    if a.dtype != b.dtype or tuple(a.shape[1:]) != tuple(b.shape[1:]):
        raise DumpError(
            f"{what}: the two folders disagree on dtype/shape ({a.dtype} {tuple(a.shape[1:])} vs "
            f"{b.dtype} {tuple(b.shape[1:])}): not the same model or not the same dumper setup"
        )
    n = len(positions)
    if n == 0:
        return RowDiff(True, 0.0, None, None, 0)
    floating = a.dtype.is_floating_point or a.is_complex()
    if floating:
        a, b = _real(torch, a), _real(torch, b)
        # same bits, or both zeros of either sign
        eq = (_bits(torch, a) == _bits(torch, b)) | ((a == 0) & (b == 0))
    else:
        eq = a == b
    row_eq = eq.reshape(n, -1).all(dim=1)
    if bool(row_eq.all()):
        return RowDiff(True, 0.0, None, None, n)
    first = positions[int((~row_eq).nonzero()[0, 0])]
    wide = torch.float64 if floating else torch.int64
    # equal elements count 0 (a NaN equal to the same NaN is not a nan difference)
    d = (a.to(wide) - b.to(wide)).abs().masked_fill(eq, 0)
    per_row = d.reshape(n, -1).amax(dim=1)
    if floating:
        nan = per_row.isnan()
        if bool(nan.any()):
            return RowDiff(False, math.nan, positions[int(nan.nonzero()[0, 0])], first, n)
    worst = int(per_row.argmax())
    return RowDiff(False, float(per_row[worst]), positions[worst], first, n)
