"""Command palette entries for the main actions (ctrl+p)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from kltui.tui.actions import DashboardActions

MAX_SAMPLE_COMMANDS = 500


class KltuiCommands(Provider):
    """The command palette's kltui entries."""

    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        # the palette of KltuiApp, whose actions are DashboardActions (a mixin of it)
        app = cast(DashboardActions, self.app)
        out: list[tuple[str, Callable[[], object], str]] = [
            (
                "Jump to first divergence",
                app.action_first_divergence,
                "move the heatmap cursor to the earliest differing token",
            ),
            ("Save screenshot (SVG)", app.action_screenshot, "write an SVG of this screen"),
            ("Re-run", app.action_rerun, "start a new run against the same servers"),
            ("Show problems", app.action_problems, "HTTP, protocol and alignment problems"),
            (
                "Diagnosis: evidence and next step",
                app.action_diagnosis,
                "condition 1 or 2, the evidence, suspects and what to run next",
            ),
            (
                "Compare servers (A vs B)",
                app.action_compare,
                "are the servers' values bit-identical on the same ids, and where not",
            ),
            ("Help: keys and metrics", app.action_help, "every key and what the numbers mean"),
        ]
        if app.read_only:
            out = [c for c in out if c[1] not in (app.action_screenshot, app.action_rerun)]
        for key in app.helper_keys():
            out.append(
                (
                    f"Switch helper: {key}",
                    partial(app.select_helper, key),
                    "show this helper in the heatmap, counters and table",
                )
            )
        for name in sorted(self.app.available_themes):
            if name.startswith("kltui") or name in ("textual-dark", "textual-light", "nord"):
                out.append((f"Theme: {name}", partial(app.set_theme, name), "change the theme"))
        st = app.selected_state()
        if st is not None:
            for s in sorted(st.book.samples)[:MAX_SAMPLE_COMMANDS]:
                m = st.book.samples[s].metrics
                out.append(
                    (
                        f"Open sample {s}",
                        partial(app.open_sample, s, None),
                        f"mean k3 {m.mean_k3:.3g}, max {m.max_k3:.3g}",
                    )
                )
        return out

    async def discover(self) -> Hits:
        """The entries shown before anything is typed."""
        for name, callback, help_text in self._commands():
            if name.startswith("Open sample") or name.startswith("Theme: textual"):
                continue
            # help as Content, shown literally; Textual annotates it as str (markup) only
            help_content: str = _literal(help_text)  # type: ignore[assignment]
            yield DiscoveryHit(Content(name), callback, text=name, help=help_content)

    async def search(self, query: str) -> Hits:
        """The entries that match what was typed, best first."""
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                help_content: str = _literal(help_text)  # type: ignore[assignment]  # as above
                yield Hit(score, _highlight(matcher, name), callback, text=name, help=help_content)


def _literal(text: str) -> Content:
    return Content(text)


def _highlight(matcher, name: str) -> Content:
    """`Matcher.highlight` parses the name as markup; helper keys carry server and recording
    strings, so the name is taken literally and only the matched letters are styled."""
    content = Content(name)
    score, offsets = matcher.fuzzy_search.match(matcher.query, name)
    if not score:
        return content
    for offset in offsets:
        if not name[offset].isspace():
            content = content.stylize(matcher._match_style, offset, offset + 1)
    return content
