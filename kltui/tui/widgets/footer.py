"""The key footer, folded when its keys do not fit: every key a screen shows fits 80 columns.

Textual's footer cuts whatever passes its right edge; at 80 columns that was `f`, `r` and `s`,
at 120 `s`'s description. When the full descriptions overflow, the same keys are shown with
short descriptions, compact spacing and no palette entry (`?` lists every key, `ctrl+p`
included); a wider terminal gets the full descriptions back.
"""

from __future__ import annotations

from textual.widgets import Footer
from textual.widgets._footer import FooterKey

# action -> the description shown when the full ones do not fit
SHORT = {
    "open": "Open",
    "cycle_helper(1)": "Next",
    "first_divergence": "1st div",
    "rerun": "Re-run",
    "save_svg": "SVG",
    "problems": "Problems",
    "app.pop_screen": "Back",
    "tail(1)": "Next tail",
    "tail(-1)": "Prev tail",
    "max_k3": "Worst",
    "cycle_sort": "Sort",
    "sweep": "Sweep",
}


class KltuiFooter(Footer):
    """The footer; when its keys overflow the line, they fold to short descriptions."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.folded = False
        self._width = 0  # the width the folding was decided at

    def compose(self):
        """Textual's footer keys, with the short descriptions when folded."""
        folded = self.folded
        self.set_reactive(Footer.compact, folded)
        self.set_class(folded, "-compact")
        self.set_reactive(Footer.show_command_palette, not folded)
        for widget in super().compose():
            if folded and isinstance(widget, FooterKey):
                widget.description = SHORT.get(widget.action, widget.description)
                widget.compact = True
            yield widget

    async def recompose(self) -> None:
        """Lay the keys out again, then fold them if they overflow."""
        await super().recompose()
        self.call_after_refresh(self._fit)

    async def _fit(self) -> None:
        self._width = self.size.width
        if not self.folded and self.max_scroll_x > 0:
            self.folded = True
            await self.recompose()

    def on_resize(self) -> None:
        """A wider terminal may fit the full descriptions again, a narrower one may not."""
        if self.size.width > self._width and self.folded:
            self.folded = False
            self.call_after_refresh(self.recompose)
        elif self.size.width < self._width and not self.folded:
            self.call_after_refresh(self._fit)
