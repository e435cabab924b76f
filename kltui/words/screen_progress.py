"""The dashboard's progress in words: a helper's row before its decode streams (requests
answered, the phase's time, the time left or what it waits for) and the counters panel while
no sample is scored (which helper, the decode's speed and time left). The TUI styles the parts
(`tui/widgets/progress.py`, `tui/widgets/counters.py`)."""

from __future__ import annotations

from enum import StrEnum

from kltui import fmt


class Waiting(StrEnum):
    """What a helper's row without an estimate waits for."""

    FIRST_TOKENS = "first_tokens"  # the scored decode, before its first tokens
    FLUSH = "flush"  # the server's cache flush
    ANSWER = "answer"  # any other request's answer


WAITING_WORDS = {
    Waiting.FIRST_TOKENS: "first tokens",
    Waiting.FLUSH: "the flush",
    Waiting.ANSWER: "its answer",
}


def before_decode(
    done: tuple[int, int] | None,
    spent: float,
    left: float | None,
    waiting: Waiting,
    *,
    compact: bool = False,
) -> tuple[str, ...]:
    """A helper's row before its decode streams, as parts: the requests answered of all
    (`done`, None when not known ahead), then each further part with its " · ": the phase's
    `spent` seconds, "ETA ~" the seconds `left` by an earlier decode of the same size, else
    "estimating" and what it is `waiting` for. `compact` (80 columns): the counts and the ETA
    only."""
    parts: list[str] = []
    if done is not None:
        parts.append(f"{done[0]}/{done[1]}" + ("" if compact else " requests"))
    if not compact:
        parts.append(f"{' · ' if parts else ''}{fmt.duration(spent)}")
    if left is not None:
        parts.append(f"{' · ' if parts else ''}ETA ~{fmt.duration(max(0.0, left))}")
    elif not compact:
        parts.append(f" · estimating: {WAITING_WORDS[waiting]}")
    return tuple(parts)


def before_decode_line(
    done: tuple[int, int] | None,
    spent: float,
    left: float | None,
    waiting: Waiting,
    *,
    compact: bool = False,
) -> str:
    """`before_decode`'s parts as one line ("1/3 requests · 42.0s · ETA ~1m05s")."""
    return "".join(before_decode(done, spent, left, waiting, compact=compact))


class Unscored(StrEnum):
    """Why the counters panel shows no figures."""

    NO_HELPER = "no_helper"
    NO_SAMPLE = "no_sample"  # the selected helper has scored no sample yet


UNSCORED_WORDS = {
    Unscored.NO_HELPER: "no helper selected",
    Unscored.NO_SAMPLE: "waiting for the first scored sample",
}


def unscored(kind: Unscored) -> str:
    """The counters panel without figures."""
    return UNSCORED_WORDS[kind]


def decoding_pace(rate: float, eta: float | None) -> str:
    """Under the waiting line, while the scored decode runs: its tokens per second and the
    time left."""
    left = f", ETA {fmt.duration(eta)}" if eta is not None else ""
    return f"decoding at {rate:,.0f} tok/s{left}"
