"""Where a multiturn sample sits (issue 58): its conversation's group and branch, its turn, and
the cached_tokens that turn was held to, read from a SampleScored (untrusted when replayed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

from kltui.metrics.turn_hits import HitExpectation
from kltui.session.events import SampleScored


@dataclass(frozen=True)
class TurnPlace:
    """One multiturn sample's place in the branch tree (group > branch > turn) and its hit."""

    group: int
    branch: int
    turn: int
    cached_tokens: int
    history: int  # the turn's input length (prompt_len): the history it decoded on
    expected: HitExpectation | None

    @classmethod
    def of(cls, ev: SampleScored) -> TurnPlace | None:
        """The place an event names, None when it names none (any other helper) or a bad one."""
        g, b, t = ev.group, ev.branch, ev.turn
        if not (_index(g) and _index(b) and _index(t)):
            return None
        return cls(
            g,
            b,
            t,
            int(ev.cached_tokens),
            int(ev.prompt_len),
            HitExpectation.of(ev.hit_expected),
        )

    @property
    def hit_ok(self) -> bool | None:
        """Whether cached_tokens is as asserted (None: no rule recorded)."""
        return None if self.expected is None else self.expected.holds(self.cached_tokens)

    @property
    def label(self) -> str:
        """g0b1: the conversation, as SGLang's kit numbers its groups and branches."""
        return f"g{self.group}b{self.branch}"


def _index(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0
