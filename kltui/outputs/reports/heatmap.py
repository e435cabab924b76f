"""k3 heatmaps for the HTML report: the one colour scale (kltui.metrics.scale: its levels,
its zero, its colours on a light background), reduction of wide runs by max, and a palette
PNG built with numpy and zlib (no imaging library).

This module only bins k3 values for display; the values come from the ScoreBook.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib

import numpy as np

from kltui import fmt
from kltui.metrics.scale import (
    EMPTY,
    FIRST_BIN,
    HIGH_EXP,
    LOW_EXP,
    N_BINS,
    NONFINITE,
    PENDING,
    ZERO,
    bin_label,
    light_palette,
    token_levels,
)
from kltui.session.store import HelperState
from kltui.untrusted import html_text

# The one scale's colours on a white page (kltui.metrics.scale.LIGHT, the kltui-light theme's):
# pale for rounding-level k3, dark red for >= 1, the direction of every TUI theme.
PALETTE = light_palette()
MAX_COLUMNS = 1024  # wider rows are reduced by max, so one bad token still shows
MAX_ROWS = 360


def _hex(level: int) -> str:
    return "#{:02x}{:02x}{:02x}".format(*PALETTE[level])


def k3_levels(k3: np.ndarray, lp_a: np.ndarray, lp_b: np.ndarray) -> np.ndarray:
    """Colour level per token (`scale.token_levels`: ZERO means bit-identical logprobs)."""
    return token_levels(k3, lp_a, lp_b).astype(np.uint8)


def _reduce_max(levels: np.ndarray, axis: int, limit: int) -> tuple[np.ndarray, int]:
    """Max over consecutive buckets along `axis` so at most `limit` remain; the level order
    (empty < not scored < zero < decades < non-finite) makes max the most severe cell."""
    n = levels.shape[axis]
    bucket = max(1, math.ceil(n / limit))
    if bucket == 1:
        return levels, 1
    pad = (-n) % bucket
    if pad:
        shape = list(levels.shape)
        shape[axis] = pad
        levels = np.concatenate([levels, np.full(shape, EMPTY, np.uint8)], axis=axis)
    if axis == 1:
        return levels.reshape(levels.shape[0], -1, bucket).max(axis=2), bucket
    return levels.reshape(-1, bucket, levels.shape[1]).max(axis=1), bucket


def heat_rows(st: HelperState) -> list[int]:
    """The sample indices the heatmap has a row for (started, scored, skipped or decoding)."""
    return sorted(
        set(range(st.n_samples)) | set(st.book.samples) | set(st.skipped) | set(st.decoded_len)
    )


def heat_levels(st: HelperState, rows: list[int]) -> np.ndarray:
    """rows x positions matrix of colour levels (not reduced)."""
    width = max([st.row_length(r) for r in rows] + [1])
    grid = np.full((len(rows), width), EMPTY, dtype=np.uint8)
    for i, r in enumerate(rows):
        s = st.book.samples.get(r)
        if s is not None:
            grid[i, : s.k3.size] = k3_levels(s.k3, s.lp_a, s.lp_b)
        else:
            # Unscored: as far as it decoded, or the whole row when skipped before decoding.
            n = st.decoded_len.get(r, 0) or width
            grid[i, :n] = PENDING
    return grid


def png(indices: np.ndarray, palette: list[tuple[int, int, int]]) -> bytes:
    """A palette PNG (colour type 3, 8 bits) from a 2-D array of palette indices."""
    h, w = indices.shape
    raw = np.zeros((h, w + 1), dtype=np.uint8)  # filter byte 0 (None) per scanline
    raw[:, 1:] = indices

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    plte = bytes(c for rgb in palette for c in rgb)
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 3, 0, 0, 0)),
            chunk(b"PLTE", plte),
            chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)),
            chunk(b"IEND", b""),
        )
    )


def heatmap_html(st: HelperState) -> str:
    """A helper's heatmap figure: the PNG, its axes, caption and legend."""
    rows = heat_rows(st)
    if not rows:
        return '<p class="muted">No samples were started, so there is no heatmap.</p>'
    full = heat_levels(st, rows)
    length = full.shape[1]
    grid, col_bucket = _reduce_max(full, 1, MAX_COLUMNS)
    grid, row_bucket = _reduce_max(grid, 0, MAX_ROWS)
    n_rows, n_cols = grid.shape
    row_px = min(16, max(1, MAX_ROWS // n_rows))
    uri = "data:image/png;base64," + base64.b64encode(png(grid, PALETTE)).decode("ascii")
    span = n_cols * col_bucket  # positions covered by the image, padding included
    xticks = "".join(
        f'<span style="left:{(p + 0.5) / span * 100:.3f}%">{p}</span>'
        for p in range(0, length, fmt.nice_step(length / 6))
    )
    if row_px >= 12 and n_rows <= 24:
        picks = list(range(n_rows))  # rows tall enough to label each one
    else:
        picks = sorted({round(i * (n_rows - 1) / 4) for i in range(5)})
    yticks = "".join(
        f'<span style="top:{(i + 0.5) / n_rows * 100:.3f}%">{rows[i * row_bucket]}</span>'
        for i in picks
    )
    reduced = []
    if col_bucket > 1:
        reduced.append(f"each pixel column is the max of {col_bucket} positions")
    if row_bucket > 1:
        reduced.append(f"each pixel row is the max of {row_bucket} samples")
    note = f" ({'; '.join(reduced)})" if reduced else ""
    alt = f"k3 heatmap of {st.helper}: {len(rows)} samples by {length} generated positions"
    return f"""<figure class="heat">
<div class="heat-plot">
<div class="yaxis" aria-hidden="true">{yticks}</div>
<div class="heat-frame"><img class="heatmap" src="{uri}" alt="{html_text(alt)}"
 width="{n_cols}" height="{n_rows}" style="height:{n_rows * row_px}px"></div>
<div class="xaxis" aria-hidden="true">{xticks}</div>
</div>
<figcaption>Rows: samples {rows[0]}–{rows[-1]}; columns: generated positions
0–{length - 1}{html_text(note)}. Colour: log10 k3 per token.</figcaption>
{legend_html(st.tail_threshold)}
</figure>"""


def _scale_pos(x: float) -> float:
    """Where k3 = x sits on the legend bar, in percent (decade bins, log-linear inside)."""
    exp = min(max(math.log10(x), LOW_EXP - 1), HIGH_EXP + 1)
    return (exp - (LOW_EXP - 1)) / N_BINS * 100


def legend_html(tau: float) -> str:
    """The colour scale's legend: one swatch per decade, tick labels, τ, the special levels."""
    swatches = "".join(
        f'<span class="sw" style="background:{_hex(level)}" title="k3 {html_text(bin_label(level))}">'
        "</span>"
        for level in range(FIRST_BIN, NONFINITE)
    )
    # Decade boundaries every 1e3, labelled under the bar: 1e-12, 1e-9, ..., 1.
    ticks = "".join(
        f'<i style="left:{_scale_pos(10.0**e):.3f}%">{"1" if e == 0 else f"1e{e}"}</i>'
        for e in range(LOW_EXP, HIGH_EXP + 1, 3)
    )
    tau_mark = ""
    if isinstance(tau, float) and math.isfinite(tau) and tau > 0:
        tau_mark = (
            f'<b class="tau" style="left:{_scale_pos(tau):.3f}%" '
            f'title="tail threshold τ = {html_text(fmt.sci(tau, 1))}">τ</b>'
        )
    specials = "".join(
        f'<span class="key"><span class="chip" style="background:{_hex(lv)}"></span>{text}</span>'
        for lv, text in (
            (ZERO, "0 (bit-identical)"),
            (NONFINITE, "NaN or inf"),
            (PENDING, "not scored"),
            (EMPTY, "no token"),
        )
    )
    return f"""<div class="legend"><span class="scale-title">k3</span>
<div class="scale">{swatches}{ticks}{tau_mark}</div>
<div class="keys">{specials}</div>
</div>"""
