"""The base of kltui's modal screens: one bordered box on the dimmed dashboard (`.modal` in
app.tcss), its title on the upper border and its closing keys on the lower one."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget

ResultT = TypeVar("ResultT")


class BoxModal(ModalScreen[ResultT]):
    """A modal screen whose content sits in one titled box (a scrolling one unless `BOX` says
    otherwise); a screen gives `BOX_TITLE` (or `box_title`) and `body`."""

    DEFAULT_CLASSES = "modal"  # its look: `.modal` in app.tcss

    BOX: ClassVar[type[Widget]] = VerticalScroll
    BOX_TITLE: ClassVar[str] = ""
    BOX_SUBTITLE: ClassVar[str] = "esc closes"

    def box_title(self) -> str | Text:
        """The box's title: `BOX_TITLE` unless the screen words it from its content."""
        return self.BOX_TITLE

    def box_subtitle(self) -> str:
        """The box's lower border: the keys that close (or answer) the screen."""
        return self.BOX_SUBTITLE

    def compose(self) -> ComposeResult:
        """The screen's box, holding what `body` yields."""
        box = self.BOX()
        box.border_title = self.box_title()
        box.border_subtitle = self.box_subtitle()
        with box:
            yield from self.body()

    def body(self) -> ComposeResult:
        """What the box holds."""
        raise NotImplementedError(f"{type(self).__name__} has no body")
