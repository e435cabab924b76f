"""Bit equality and max |diff| of aligned rows. Equality is on the bits (a float's -0.0 is not
0.0 and a NaN equals the same NaN), because the claim being checked is "bit-identical"."""

from __future__ import annotations

import math
from dataclasses import dataclass

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
    t = t.contiguous()
    if t.dtype.is_floating_point or t.is_complex():
        size = t.element_size()
        if t.is_complex():
            t = torch.view_as_real(t).contiguous()
            size = t.element_size()
        return t.view(getattr(torch, _INT_OF_SIZE[size]))
    return t


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
    eq = _bits(torch, a) == _bits(torch, b)
    row_eq = eq.reshape(n, -1).all(dim=1) if a.dim() > 1 else eq
    if bool(row_eq.all()):
        return RowDiff(True, 0.0, None, None, n)
    first = positions[int((~row_eq).nonzero()[0, 0])]
    if a.dtype.is_floating_point or a.is_complex():
        d = (a.to(torch.float64) - b.to(torch.float64)).abs()
        per_row = d.reshape(n, -1).amax(dim=1) if a.dim() > 1 else d
        nan = per_row.isnan()
        if bool(nan.any()):
            return RowDiff(False, math.nan, positions[int(nan.nonzero()[0, 0])], first, n)
        worst = int(per_row.argmax())
        return RowDiff(False, float(per_row[worst]), positions[worst], first, n)
    d = (a.to(torch.int64) - b.to(torch.int64)).abs()
    per_row = d.reshape(n, -1).amax(dim=1) if a.dim() > 1 else d
    worst = int(per_row.argmax())
    return RowDiff(False, float(per_row[worst]), positions[worst], first, n)
