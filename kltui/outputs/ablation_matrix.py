"""The live matrix of a sweep as plain text: one row per configuration, for one helper at a time
(the TUI's sweep screen, `tui/screens/ablation.py`, shows these rows and computes nothing).

A row's figures come from the sweep's reading (`ablate/reading.Ablation`, recomputed by the
feed when a configuration ends) and the configuration's store (`session/helper_view.HelperView`:
its tail fraction, its progress while it runs); its state from what the sweep said of it through
`run/ablate.SweepView` (`Live`): waiting, starting (seconds, the log's last line), running
(the helper and its samples), done, failed (its one line: what happened and the log's last
lines), not run, interrupted.

Everything here is plain text with server strings inside (log lines, failure lines): the view
escapes it for the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from kltui import fmt
from kltui.ablate.sweep import FAILED, INTERRUPTED, MEASURED, NOT_RUN, ConfigRun, Sweep
from kltui.outputs.ablation_rows import (
    chain_lines,
    helper_names,
    pairs_line,
    stress_lines,
    tail_lines,
)
from kltui.readings.ablation import BASE_EFFECT, Ablation, ConfigReading, HelperReading
from kltui.readings.ablation_kinds import Effect
from kltui.registry import same_engine
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState, SessionStore
from kltui.untrusted import one_line
from kltui.words.ablation import verdict_line
from kltui.words.ablation_config import condition_cell, helper_line, num, trap_line, why_text
from kltui.words.ablation_note import NoteKind, note, note_kind, stress_verdict
from kltui.words.ablation_sweep import INTERRUPTED_LINE, run_line
from kltui.words.ablation_timing import timing_line

# the states of a row, as the matrix colours them
WAITING, STARTING, RUNNING, DONE = "waiting", "starting", "running", "done"
LOG_LINE = 80  # characters of a starting server's last log line in its row


@dataclass
class Live:
    """What the sweep said of one configuration so far (`run/ablate.SweepView`'s calls)."""

    phase: str = WAITING  # waiting | starting | running | ended
    seconds: float = 0.0  # how long its server has been starting
    log_line: str = ""  # its log's last line while it starts (raw server text)
    store: SessionStore | None = None  # its run's store, from the run's first event


class Tone(StrEnum):
    """What a verdict cell says for the configuration, from the kinds it is written from (the
    view colours it; it never reads the words)."""

    GOOD = "good"  # the divergence removed or reduced
    BAD = "bad"  # worse, introduced, or the configuration failed
    WARN = "warn"  # the flag did not take effect, inconclusive, or helpers left untested
    PLAIN = "plain"


# a helper's effect against the base -> its tone (the others are plain)
EFFECT_TONE = {
    Effect.REMOVED: Tone.GOOD,
    Effect.REMOVED_ON: Tone.GOOD,
    Effect.REDUCED: Tone.GOOD,
    Effect.WORSE: Tone.BAD,
    Effect.INTRODUCED: Tone.BAD,
    Effect.INCONCLUSIVE: Tone.WARN,
    Effect.NOT_TESTED: Tone.WARN,
}


@dataclass(frozen=True)
class MatrixRow:
    """One configuration's row (plain text; `state_kind` picks its colour)."""

    name: str
    state_kind: str  # waiting | starting | running | done | failed | not run | interrupted
    state: str  # the state in one line (a failure: its line with the log's last lines)
    avg: str  # avg_kl_div of the helper shown
    tail: str  # its tail fraction (tokens with k3 over tau)
    bit_equal: str  # samples bit-identical to the base's, of those both scored
    condition: str
    verdict: str  # the helper's effect against the base, or the configuration's trap
    detail: str  # the row in full, shown under the matrix while the cursor is on it
    verdict_tone: Tone = Tone.PLAIN


def _helper_state(store: SessionStore | None, helper: str) -> HelperState | None:
    """The helper's state on the store's one server (a sweep's run measures one server)."""
    if store is None:
        return None
    ids = [i.url for i in store.identities() if i.url]
    for st in store.helpers.values():
        if st.helper == helper and (not ids or st.server == ids[0]):
            return st
    return None


def _running(store: SessionStore | None) -> str:
    """The helper being measured and how far it is, from the run's store."""
    if store is None or not store.helpers:
        return "running: connecting"
    st = next(
        (s for s in reversed(list(store.helpers.values())) if s.finished is None),
        None,
    )
    if st is None:
        return "running: finishing"
    v = HelperView.of(st)
    return f"running: {st.helper} {v.scored}/{v.samples} scored"


def state_of(run: ConfigRun, live: Live | None, ended: bool) -> tuple[str, str]:
    """(kind, line) of a configuration; `ended`: the sweep is over (a configuration still
    waiting then was not run)."""
    if run.status == MEASURED:
        took = f" in {run.run_s:.1f} s" if run.run_s is not None else ""
        return DONE, f"done{took}"
    if run.status == FAILED:
        return FAILED, f"failed: {run.error}"
    if run.status == INTERRUPTED:
        return INTERRUPTED, "interrupted: cut short, not a result"
    phase = live.phase if live is not None else WAITING
    if ended:
        # cut short (Ctrl-C, q) while its server started or its helpers ran: never a result
        if phase in (STARTING, RUNNING):
            return INTERRUPTED, f"interrupted while {phase}: not a result"
        return NOT_RUN, run.status
    if phase == STARTING and live is not None:
        last = one_line(live.log_line, LOG_LINE) if live.log_line else "…"
        return STARTING, f"starting {live.seconds:.0f} s · {last}"
    if phase == RUNNING and live is not None:
        return RUNNING, _running(live.store)
    if run.status != NOT_RUN:
        return NOT_RUN, run.status
    return WAITING, WAITING


def _verdict(c: ConfigReading | None, h: HelperReading | None, run: ConfigRun) -> str:
    if c is None or not c.measured:
        return ""
    said = note(c, run)
    if said:
        return said
    if h is None:
        return "–"
    if h.effect == BASE_EFFECT:
        return "base"
    return f"{h.effect}: {why}" if (why := why_text(h)) else h.effect


# the note's case -> its tone; NONE: the helper's effect decides
NOTE_TONE = {
    NoteKind.FAILED: Tone.BAD,
    NoteKind.NOT_TAKEN: Tone.WARN,
    NoteKind.UNTESTED: Tone.WARN,
}


def _tone(c: ConfigReading | None, h: HelperReading | None, run: ConfigRun) -> Tone:
    """The verdict cell's tone, from the kinds `_verdict`'s words are written from."""
    if c is None or not c.measured:
        return Tone.PLAIN
    kind = note_kind(c, run)
    if kind is not NoteKind.NONE:
        return NOTE_TONE.get(kind, Tone.PLAIN)
    if stress_verdict(run) is not None or h is None:  # only --stress's verdict is said, or "–"
        return Tone.PLAIN
    return EFFECT_TONE.get(h.effect, Tone.PLAIN)


def _bit_equal(h: HelperReading | None) -> str:
    if h is None:
        return "–"
    if h.effect == BASE_EFFECT:
        return "(base)"
    if not h.common:
        return "–"
    return f"{h.identical_to_base}/{h.common}"


def _condition(c: ConfigReading | None) -> str:
    if c is None or not c.measured:
        return ""
    return condition_cell(c)


def matrix_rows(
    sweep: Sweep, ab: Ablation | None, helper: str, live: Mapping[str, Live]
) -> list[MatrixRow]:
    """Every configuration of the sweep, in sweep order, for `helper`; `ab`: the reading of
    the configurations that ended so far (None before the base ended)."""
    readings = {} if ab is None else {c.config.name: c for c in (ab.base, *ab.configs)}
    ended = sweep.total_s is not None
    out = []
    for run in sweep.runs:
        c = readings.get(run.name)
        h = c.helper(helper) if c is not None and c.measured else None
        kind, state = state_of(run, live.get(run.name), ended)
        st = _helper_state(run.store, helper)
        tail = HelperView.of(st).summary.tail_fraction if st is not None else None
        avg = "–"
        if h is not None:
            avg = num(h.level) if h.level is not None else h.effect
        detail = f"{run.name}: {state}"
        if c is not None and c.measured:
            detail = "; ".join(x for x in (helper_line(h) if h else None, trap_line(c)) if x)
        elif run.status == FAILED and run.error:
            detail = run.error
        out.append(
            MatrixRow(
                run.name,
                kind,
                state,
                avg,
                fmt.pct(tail) if st is not None and tail is not None else "–",
                _bit_equal(h),
                _condition(c),
                _verdict(c, h, run),
                detail,
                _tone(c, h, run),
            )
        )
    return out


def helpers_of(ab: Ablation | None, live: Mapping[str, Live]) -> list[str]:
    """The helpers the matrix can show: the table's (the base's first), else those of the
    runs measured so far (while the base runs)."""
    if ab is not None and ab.base.measured:
        return helper_names(ab)
    out: list[str] = []
    for lv in live.values():
        for st in lv.store.helpers.values() if lv.store is not None else ():
            if same_engine(st.helper) and st.helper not in out:
                out.append(st.helper)
    return out


def verdict_lines(sweep: Sweep, ab: Ablation | None, notes: list[str] | None = None) -> list[str]:
    """Under the matrix: the verdict with its traps and next step once the sweep is over,
    what is known so far until then; then --chain's steps (`notes`, what it said as each step
    began) until its result is in, and its result after."""
    chain = chain_lines(sweep) if sweep.chain else list(notes or ())
    return [*_verdict_lines(sweep, ab), *chain]


def _verdict_lines(sweep: Sweep, ab: Ablation | None) -> list[str]:
    if ab is None or not ab.base.measured:
        if sweep.total_s is not None and sweep.runs and sweep.base.status != MEASURED:
            return [f"the base did not start: {run_line(sweep.base)}"]
        return ["the verdict comes once the base and another configuration are measured"]
    if sweep.total_s is None:
        return [f"so far: {verdict_line(ab)}"]
    out = tail_lines(ab)
    if sweep.interrupted:
        out.append(INTERRUPTED_LINE)
    elif (said := pairs_line(sweep)) is not None:
        out.append(said)
    return [*out, *stress_lines(sweep), timing_line(sweep, sweep.timing())]
