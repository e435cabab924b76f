"""Number formatting shared by every view (TUI, headless tables, reports)."""

from __future__ import annotations

import math


def sci(x: float | None, digits: int = 3) -> str:
    """A number in short scientific notation (– for None)."""
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    return f"{x:.{digits}e}"


def pct(x: float | None) -> str:
    """A fraction as a percentage (– for None or NaN)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x == 0:
        return "0%"
    if x < 0.001:
        return f"{x * 100:.2g}%"
    return f"{x * 100:.2f}%"


def position(p: dict | None) -> str:
    """A {sample, position} as text, or none."""
    if not p:
        return "none"
    return f"sample {p['sample']} @ {p['position']}"


def duration(s: float) -> str:
    """Seconds as 12.3s or 4m05s."""
    if s < 60:
        return f"{s:.1f}s"
    m, s = divmod(int(s), 60)
    return f"{m}m{s:02d}s"


def nice_step(raw: float) -> int:
    """The smallest 1, 2 or 5 times a power of ten that is >= raw (and >= 1): axis tick spacing."""
    raw = max(1.0, raw)
    mag = 10 ** math.floor(math.log10(raw))
    return int(next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw))
