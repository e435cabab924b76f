"""The heatmap panel's status line in words (`tui/widgets/heatpanel.py` shows it as the
panel's subtitle): how many tokens a cell holds, fit or zoomed, how many positions; and why a
zoom key changed nothing (`tui/widgets/heatnav.py`)."""

from __future__ import annotations

from enum import StrEnum


def zoom_status(tokens_per_cell: float, zoom: int | None, positions: int) -> str:
    """The panel's status: a cell's tokens (the max shown where a cell holds several), fit
    (`zoom` None) or zoomed to `zoom` tokens a cell, the longest row's positions."""
    if tokens_per_cell <= 1:
        cell = "1 token/cell"
    elif zoom is None:
        cell = f"≈{tokens_per_cell:.1f} tokens/cell, max shown"
    else:
        cell = f"{zoom} tokens/cell, max shown"
    mode = "fit" if zoom is None else "zoomed, shift+←/→ pans"
    return f"{cell} · {mode} · {positions} positions"


class NoZoom(StrEnum):
    """Why a zoom key changed nothing."""

    NO_POSITIONS = "no_positions"  # nothing decoded yet
    ALL_FIT = "all_fit"  # every position fits at one token a cell
    MOST_IN = "most_in"  # zoom in, at one token a cell already
    ALREADY_FIT = "already_fit"  # zoom out or fit, fitted already


def no_zoom(key: str, kind: NoZoom, positions: int, cells: int) -> str:
    """What the zoom `key` ("zoom in", "zoom out", "fit") says when it changes nothing: the
    longest row's `positions`, the heatmap's `cells` across."""
    why = {
        NoZoom.NO_POSITIONS: "no positions yet",
        NoZoom.ALL_FIT: f"all {positions} positions fit at 1 token/cell: nothing to zoom",
        NoZoom.MOST_IN: "1 token/cell already: the most zoomed in",
        NoZoom.ALREADY_FIT: f"already fit: all {positions} positions in {cells} cells",
    }[kind]
    return f"{key}: {why}"
