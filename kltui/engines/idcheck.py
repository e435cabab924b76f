"""Telling a server's id quirk apart from a misaligned answer.

Real SGLang (0.5.17 on an H200, 0.5.23 on CPU) reports token id 0 in `input_token_logprobs`
where id 1023, the last id of a 1024-token vocabulary, was sent; SGLang's own helpers never
read those ids, so the run is still meaningful. A shifted or reordered answer is not: it must
still fail loudly. The two look different in the ids themselves:

- a quirk maps an id to another id *wherever that id was sent* (one sent id, one reported id,
  at every occurrence), and touches a minority of positions;
- a shift or another prompt's answer reports a sent id correctly at one position and
  differently at another, or maps it to several ids, or differs at most positions.

At the positions a helper compares (the generated tokens) the bar is higher, since a per-id
mapping there is also what a tail shifted by one looks like: only the documented quirk passes
(`unexplained`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

SHOWN = 5  # positions named in a message


class Misalignment(StrEnum):
    """Why differing ids cannot be a per-id quirk."""

    MOST_DIFFER = "most-differ"  # more than half the positions differ
    SOMETIMES_SENT = "sometimes-sent"  # a differing id is reported as sent somewhere else
    SEVERAL_IDS = "several-ids"  # one sent id is reported as several different ids


@dataclass(frozen=True, slots=True)
class IdCheck:
    """Where a server's reported token ids differ from the sent ones, and whether that is
    explainable: `kind` None when it is (a per-id quirk, or no difference)."""

    positions: np.ndarray  # where the reported id differs from the sent one
    kind: Misalignment | None = None
    compared: int = 0  # how many ids were compared (MOST_DIFFER's figure)
    token: int | None = None  # SOMETIMES_SENT: the id reported as sent ...
    at: int | None = None  # ... at this position, and differently elsewhere

    @property
    def misaligned(self) -> str | None:
        """Why the differences cannot be a per-id quirk, in words (None: they can)."""
        if self.kind is Misalignment.MOST_DIFFER:
            return f"{self.positions.size} of {self.compared} positions differ"
        if self.kind is Misalignment.SOMETIMES_SENT:
            return (
                f"token {self.token} is reported as sent at position {self.at} but not "
                "everywhere else"
            )
        if self.kind is Misalignment.SEVERAL_IDS:
            return "one sent id is reported as several different ids"
        return None


def check_ids(reported: np.ndarray, sent: np.ndarray) -> IdCheck:
    """Compares the ids a server says it scored with the ids sent (same length)."""
    reported = np.asarray(reported, dtype=np.int64)
    sent = np.asarray(sent, dtype=np.int64)
    diff = reported != sent
    pos = np.flatnonzero(diff)
    if pos.size == 0:
        return IdCheck(pos)
    if pos.size * 2 > sent.size:
        return IdCheck(pos, Misalignment.MOST_DIFFER, compared=sent.size)
    odd = np.unique(sent[pos])
    at = np.isin(sent, odd)
    if not diff[at].all():
        k = int(np.flatnonzero(at & ~diff)[0])
        return IdCheck(pos, Misalignment.SOMETIMES_SENT, token=int(sent[k]), at=k)
    pairs = np.unique(np.stack([sent[at], reported[at]]), axis=1)
    if pairs.shape[1] != odd.size:
        return IdCheck(pos, Misalignment.SEVERAL_IDS)
    return IdCheck(pos)


def describe(positions: np.ndarray, reported: np.ndarray, sent: np.ndarray) -> str:
    """`pos 17: sent 1023, reported 0; ...` for the first few positions."""
    shown = [
        f"pos {int(p)}: sent {int(sent[p])}, reported {int(reported[p])}" for p in positions[:SHOWN]
    ]
    more = f"; +{positions.size - SHOWN} more" if positions.size > SHOWN else ""
    return "; ".join(shown) + more


def unexplained(rows: list[tuple[np.ndarray, np.ndarray, int]]) -> tuple[int, int] | None:
    """The first compared position whose reported id is not the documented quirk, as
    (row, position), or None. `rows` holds (reported, sent, first compared position) for each
    answer of one batch. Tolerated: a (sent, reported) pair that also occurs at a prompt
    position of the batch, or one sent id (the last vocabulary id: there is only one) reported
    as 0."""
    prompt_pairs: set[tuple[int, int]] = set()
    for reported, sent, start in rows:
        k = np.flatnonzero(reported[:start] != sent[:start])
        prompt_pairs.update(zip(sent[k].tolist(), reported[k].tolist(), strict=True))
    zero_id: int | None = None
    for i, (reported, sent, start) in enumerate(rows):
        for j in np.flatnonzero(reported[start:] != sent[start:]).tolist():
            pair = (int(sent[start + j]), int(reported[start + j]))
            if pair in prompt_pairs:
                continue
            if pair[1] == 0 and zero_id in (None, pair[0]):
                zero_id = pair[0]
                continue
            return i, j
    return None
