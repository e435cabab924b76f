"""cross_engine's requests in batches, and SGLang's answers as arrays: how samples are cut
into requests under an entry budget, and per-position logprob lists as dense tables."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kltui.engines.sglang_parse import GenResult
from kltui.engines.vllm_parse import TopK, dense_topk

# One request carries at most this many logprob entries (positions x ids per position); more
# would make answers of hundreds of MB. A sample alone above it loses its token_ids_logprob.
ENTRY_BUDGET = 1_000_000
MAX_CHUNK = 16


def pairs_to_topk(rows: list | None, k: int, p: int) -> TopK:
    """SGLang's per-position [(id, logprob), ...] lists (None rows allowed) as a dense TopK."""
    pos_l: list[int] = []
    id_l: list[int] = []
    lp_l: list[float] = []
    for i, row in enumerate((rows or [])[:p]):
        if row:
            pos_l.extend([i] * len(row))
            id_l.extend(e[0] for e in row)
            lp_l.extend(e[1] for e in row)
    return dense_topk(
        np.asarray(pos_l, dtype=np.int64),
        np.asarray(id_l, dtype=np.int64),
        np.asarray(lp_l, dtype=np.float64),
        p,
        k,
    )


def token_ids_table(rows: list | None, ids: np.ndarray, p: int, what: str) -> np.ndarray:
    """SGLang's input_token_ids_logprobs as [p, M] in the order of `ids` (row 0 may be None)."""
    out = np.full((p, ids.size), np.nan)
    if rows is None or not ids.size:
        return out
    if len(rows) != p:
        raise ValueError(f"{what}: {len(rows)} token_ids_logprob rows for {p} positions")
    body = [r for r in rows if r is not None]
    if not body:
        return out
    # parsed rows hold (token_id, logprob) pairs
    arr = np.asarray(body, dtype=np.float64)
    if arr.shape[1:] != (ids.size, 2) or not (arr[:, :, 0] == ids).all():
        raise ValueError(f"{what}: token_ids_logprob ids differ from the ids requested")
    filled = np.asarray([r is not None for r in rows])
    out[filled] = arr[:, :, 1]
    return out


@dataclass
class Sample:
    """One cross_engine sample: prompt, continuation and SGLang's answer."""

    index: int
    prompt: np.ndarray
    cont: np.ndarray
    sglang_out: GenResult | None = None

    @property
    def seq(self) -> np.ndarray:
        """The prompt followed by the continuation."""
        return np.concatenate([self.prompt, self.cont]) if self.cont.size else self.prompt

    @property
    def start(self) -> int:
        """First scored position: the continuation, or position 1 of a bare prompt."""
        return int(self.prompt.size) if self.cont.size else 1


def chunks(samples: list[Sample], k: int) -> list[list[Sample]]:
    """The samples cut into batches that keep each answer under its size bound."""
    out: list[list[Sample]] = []
    cur: list[Sample] = []
    used = 0
    for s in samples:
        cost = s.seq.size * (1 + 2 * k)
        if cur and (len(cur) >= MAX_CHUNK or used + cost > ENTRY_BUDGET):
            out.append(cur)
            cur, used = [], 0
        cur.append(s)
        used += cost
    if cur:
        out.append(cur)
    return out
