"""The TUI's CSS lives in app.tcss only, with colours from the theme (issue 20, "CSS once")."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

from textual.screen import ModalScreen

TUI = Path(__file__).parents[2] / "kltui" / "tui"
COLOUR_NAME = re.compile(
    r"""["'](?:bold |dim |italic )*(?:red|green|yellow|blue|magenta|cyan)["']"""
)


def sources() -> list[Path]:
    return sorted(TUI.rglob("*.py"))


def test_no_widget_carries_its_own_css():
    holders = [p.relative_to(TUI) for p in sources() if "DEFAULT_CSS" in p.read_text()]
    assert holders == []


def test_no_colour_is_named_in_python():
    """States are coloured in app.tcss from theme variables, never by a colour name in code."""
    named = [
        f"{p.relative_to(TUI)}: {m.group(0)}"
        for p in sources()
        for m in COLOUR_NAME.finditer(p.read_text())
    ]
    assert named == []


def test_every_modal_screen_shares_the_modal_css():
    modals = []
    for path in sorted((TUI / "screens").glob("*.py")):
        module = importlib.import_module(f"kltui.tui.screens.{path.stem}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, ModalScreen) and cls.__module__ == module.__name__:
                modals.append(cls)
    assert len(modals) >= 7
    assert all("modal" in cls.DEFAULT_CLASSES.split() for cls in modals), modals
    assert ".modal" in (TUI / "app.tcss").read_text()
