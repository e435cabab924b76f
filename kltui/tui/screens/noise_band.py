"""The drill-down's own-noise band (cross_engine's floors): at each position, how far each
engine moved from its own first answer when the sample was scored again in another batch
(`FloorScored`), beside how far the engines are from each other there."""

from __future__ import annotations

import numpy as np
from rich.text import Text

from kltui import fmt
from kltui.metrics.k3 import ScoredSample, log_ratio
from kltui.session.store import HelperState
from kltui.words.screen_drill import band_note as band_note_parts

# the styles of band_note_parts' parts: the label, then words dim and figures plain in turn
STYLES = ("bold", "dim", "", "dim", "", "dim")


def band(state: HelperState, sample: int, scored: ScoredSample) -> np.ndarray | None:
    """[P, 2]: |Δ| of SGLang (A) and of vLLM (B) against itself per position; None when this
    sample was not scored again (or its arrays do not line up)."""
    ev = state.floors.get(sample)
    if ev is None or ev.lp_a.size != scored.lp_a.size or ev.lp_b.size != scored.lp_b.size:
        return None
    da = np.abs(log_ratio(scored.lp_a, ev.lp_a))
    db = np.abs(log_ratio(scored.lp_b, ev.lp_b))
    return np.stack([da, db], axis=1)


def band_cell(row: np.ndarray) -> str:
    """One position's band: |ΔA| / |ΔB| ("0" where bit-identical)."""
    return " / ".join("0" if x == 0 else fmt.sci(float(x), 1) for x in row)


def band_note(b: np.ndarray, scored: ScoredSample) -> Text:
    """The heading's line: each engine's largest own move, and the positions where the engines
    are further apart than both own moves together."""
    gap = np.abs(log_ratio(scored.lp_a, scored.lp_b))
    beyond = int((gap > b.sum(axis=1)).sum())
    figures = (float(b[:, 0].max(initial=0.0)), float(b[:, 1].max(initial=0.0)), beyond, gap.size)
    t = Text()
    for piece, style in zip(band_note_parts(*figures), STYLES, strict=True):
        t.append(piece, style=style)
    return t
