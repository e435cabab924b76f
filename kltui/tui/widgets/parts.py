"""Styles of the parts of a widget's one rendered line (its COMPONENT_CLASSES), as app.tcss
sets them for the widget's state classes (`-pass`, `-fail`, ...).

Read fresh on every call: Textual caches component styles per widget and does not clear that
cache when only a state class of the widget changed (the widget's own rules stay the same).
"""

from __future__ import annotations

from rich.style import Style
from textual.dom import DOMNode


def part(node: DOMNode, *names: str) -> Style:
    """Colour and text style of a component, on whatever background is under it."""
    try:
        return node.get_component_styles(*names).partial_rich_style
    except KeyError:  # not styled yet (before the first CSS pass)
        return Style()


def badge_part(node: DOMNode, *names: str) -> Style:
    """A component with its own background; its `color: auto` reads on that background."""
    try:
        return node.get_component_styles(*names).rich_style
    except KeyError:
        return Style(bold=True, reverse=True)
