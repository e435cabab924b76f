"""The verdict on *why*: condition 1 (kernels) vs condition 2 (a state bug), and what next."""

from __future__ import annotations

import re

from rich.text import Text
from textual.dom import DOMNode
from textual.widgets import Static

from kltui.readings.diagnosis import Diagnosis
from kltui.tui.widgets.parts import part
from kltui.untrusted import safe
from kltui.words.diagnosis import label, said

# the component class of each condition's badge, coloured in app.tcss
CONDITION_CLASS = {
    "exact": "condition--exact",
    "1": "condition--1",
    "2": "condition--2",
    "1+2": "condition--2",
}
BADGE_CLASSES = {"condition--badge", *CONDITION_CLASS.values()}
CONDITION_LABEL = {
    "exact": "EXACT",
    "1": "COND 1",
    "2": "COND 2",
    "1+2": "COND 1+2",
    "unknown": "…",
}


def badge(d: Diagnosis, node: DOMNode) -> Text:
    """The condition badge, styled by `node`'s component classes (BADGE_CLASSES)."""
    names = ["condition--badge"]
    if d.kind in CONDITION_CLASS:
        names.append(CONDITION_CLASS[d.kind])
    label = CONDITION_LABEL.get(d.kind, d.kind)
    # The style goes on the span, not on the Text: a Text's own style would colour everything
    # the caller appends after the badge (the whole diagnosis line came out reversed).
    t = Text()
    t.append(f" {label} ", style=part(node, *names))
    return t


# where a text may be cut: after a sentence (not "e.g."), a colon, semicolon or comma, and
# before a label's "[rests on ...]"
_CLAUSE_END = re.compile(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.:;,])\s|\s(?=\[)")
MORE = " …"  # a label cut short; the panel's subtitle names the key with the rest
STEP_HEAD = Text("next: ", style="bold")


def clause_cuts(label: str) -> list[int]:
    """The lengths at which `label` may be cut and still end where a clause ends, outside
    any parenthesis ("(radix hit past the prompt: …" would never close)."""
    depth, inside = 0, []
    for ch in label:
        inside.append(depth > 0)
        depth = max(0, depth + (ch in "([") - (ch in ")]"))
    return [m.start() for m in _CLAUSE_END.finditer(label) if not inside[m.start()]]


class DiagnosisBar(Static):
    """The diagnosis at the bottom of the dashboard: one line per server, and the next step.

    The panel has the lines app.tcss gives it (one on a short narrow terminal, three on a short
    wide one); what does not fit is cut where a clause ends, never mid-sentence, and the
    subtitle says `d` shows the rest. The next step keeps its line whenever the panel has two;
    with three, a verdict cut before its first suspect (the cause: the state path of a state
    bug, the likeliest kernel of batch variance) gets that suspect on a line of its own."""

    DEFAULT_CLASSES = "panel"  # its look: `.panel` in app.tcss
    COMPONENT_CLASSES = BADGE_CLASSES | {"diagnosis--error"}

    _shown: tuple | None = None
    cut = False  # the last show left something out

    def on_resize(self) -> None:
        """Lay the lines out again for the new width and height."""
        if self._shown is not None:
            self.show(*self._shown)

    def _budget(self) -> tuple[int, int | None]:
        """(width, lines) the panel has for its text; lines None: as many as it needs."""
        width = self.content_size.width or max(20, self.app.size.width - 4)
        cap = self.styles.max_height
        if cap is None or cap.unit.name != "CELLS":
            return width, None
        border = 2 if self.styles.border_top[0] else 0
        return width, max(1, int(cap.value) - border)

    def _height(self, t: Text, width: int) -> int:
        return len(t.wrap(self.app.console, width))

    def _fit(self, head: Text, label: str, rest: Text | None, width: int, lines: int) -> Text:
        """`head` + `label` (+ `rest`) in `lines` lines at `width`; else the label cut where a
        clause ends (or, if even its first clause is too long, at a word), marked with MORE."""

        def build(text: str, more: bool) -> Text:
            t = head.copy()
            t.append_text(safe(text, limit=400))
            if more:
                t.append(MORE, style="dim")
            if rest is not None:
                t.append_text(rest)
            return t

        whole = build(label, False)
        if self._height(whole, width) <= lines:
            return whole
        self.cut = True
        for n in reversed(clause_cuts(label)):
            t = build(label[:n], True)
            if self._height(t, width) <= lines:
                return t
        words = label.split(" ")
        for k in range(len(words) - 1, 0, -1):
            t = build(" ".join(words[:k]), True)
            if self._height(t, width) <= lines:
                return t
        return build("", True)

    def show(
        self,
        diagnoses: list[Diagnosis],
        multi: bool,
        pending: int = 0,
        error: str | None = None,
        ended: bool = False,
    ) -> None:
        """`error`: the run's error line (`kltui check`'s); `ended`: no helper will finish."""
        self._shown = (diagnoses, multi, pending, error, ended)
        self.border_title = _title(pending)
        width, budget = self._budget()
        left = budget if budget is not None else 1 << 16
        self.cut = False
        # the run's error is the one thing to read: a small terminal gives it its lines
        self.set_class(bool(error), "-error")
        lines: list[Text] = []
        if error:
            err = safe(error, style=part(self, "diagnosis--error"), limit=400)
            lines.append(err)
            left -= self._height(err, width)
        if not diagnoses and not error:
            wait = (
                "no diagnosis: no helper finished" if ended else "waiting for a helper to finish…"
            )
            lines.append(Text(wait, style="dim"))
        one = said(diagnoses[0]) if len(diagnoses) == 1 else None
        step = one.next_step if one else None
        # the first suspect keeps a line of the panel when it has three (given back when the
        # verdict is shown whole or names it), so a cut verdict still names its cause
        suspect = one.suspects[0] if one and one.suspects and left >= 3 else None
        reserve = self._step_reserve(step, width, left - (suspect is not None))
        verdicts, suspect, left = self._verdicts(diagnoses, multi, suspect, reserve, width, left)
        lines += verdicts
        if suspect is not None:
            head = Text()
            head.append("suspect: ", style="bold")  # on the span: the suspect stays plain
            sus = self._fit(head, suspect, None, width, 1)
            left -= self._height(sus, width)
            lines.append(sus)
        if step and reserve:  # the verdict's leftover lines go to the step too
            lines.append(self._fit(STEP_HEAD, step, None, width, max(1, left)))
        self.border_subtitle = self._subtitle(bool(diagnoses))
        self.update(Text("\n").join(lines))

    def _step_reserve(self, step: str | None, width: int, avail: int) -> int:
        """The lines the next step keeps (when the panel has two), the verdict at least half of
        them: its "[rests on ...]" goes before the step's command. 0: the step gives way."""
        if not step:
            return 0
        need = self._height(STEP_HEAD + safe(step, limit=400), width)
        reserve = min(need, avail - max(1, avail // 2)) if avail >= 2 else 0
        self.cut = self.cut or reserve == 0
        return reserve

    def _verdicts(
        self,
        diagnoses: list[Diagnosis],
        multi: bool,
        suspect: str | None,
        reserve: int,
        width: int,
        left: int,
    ) -> tuple[list[Text], str | None, int]:
        """One verdict per server, each in its share of the lines the step leaves; the suspect
        still owed a line (None once a verdict is whole or names it), and the lines left."""
        avail = left - (suspect is not None)
        out: list[Text] = []
        for i, d in enumerate(diagnoses):
            head = badge(d, self)
            head.append(" ")
            if multi:
                head.append_text(safe(d.server, style="bold"))
                head.append(": ")
            share = max(1, (avail - reserve) // (len(diagnoses) - i))
            t = self._fit(head, label(d), None, width, share)
            used = self._height(t, width)
            left, avail = left - used, avail - used
            out.append(t)
            shown = " ".join(t.plain.split())
            if suspect is not None and (
                not shown.endswith(MORE.strip()) or " ".join(suspect.split()) in shown
            ):
                suspect, avail = None, avail + 1  # the verdict is whole or names it: no line
        return out, suspect, left

    def _subtitle(self, diagnosed: bool) -> str:
        """The lower border: what `d` shows, and that something was cut."""
        if not diagnosed:
            return ""
        if self.cut:
            return "… d: in full, with the evidence and next step"
        return "d: evidence and next step"


def _title(pending: int) -> str:
    """Until every helper has finished, the comparison between helpers is incomplete."""
    if not pending:
        return "diagnosis"
    return f"diagnosis · provisional, {pending} helper{'s' if pending > 1 else ''} to go"
