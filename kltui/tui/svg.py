"""The dashboard's SVG screenshot as a file that renders the same everywhere.

Rich writes each run of cells as one `<text>` element, its spaces as U+00A0. Under SVG's default
`xml:space`, librsvg (`rsvg-convert`, the common converter) strips a run's leading and trailing
spaces anyway, so "○ idle" + "  run 1" renders "○ idlerun 1"; Chromium keeps them. With
`xml:space="preserve"` on the root every renderer keeps every space.
"""

from __future__ import annotations

from pathlib import Path


def preserve_spaces(svg: str) -> str:
    """`svg` (Rich's export) with xml:space="preserve" on its root element."""
    if 'xml:space="preserve"' in svg:
        return svg
    return svg.replace("<svg ", '<svg xml:space="preserve" ', 1)


def write_svg(svg: str, path: Path) -> str:
    """Writes the screenshot to `path` (OSError as it comes); returns the path written."""
    path.write_text(preserve_spaces(svg), encoding="utf-8")
    return str(path)
