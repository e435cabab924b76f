"""cross_engine's and hf_reference's requests in batches, and SGLang's answers as arrays: how
samples are cut into requests under an entry budget, the teacher-forced SGLang prefill both
send, and per-position logprob lists as dense tables."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kltui.engines.sglang_parse import GenResult, IdRows
from kltui.engines.sglang_request import LogprobAsk
from kltui.engines.vllm_parse import TopK, dense_topk
from kltui.session.events import TokensDecoded

if TYPE_CHECKING:
    from kltui.helpers.context import HelperContext

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


def token_ids_table(rows: IdRows | None, ids: np.ndarray, p: int, what: str) -> np.ndarray:
    """SGLang's input_token_ids_logprobs as [p, M] in the order of `ids` (row 0 may be None)."""
    out = np.full((p, ids.size), np.nan)
    if rows is None or not ids.size:
        return out
    if len(rows) != p:
        raise ValueError(f"{what}: {len(rows)} token_ids_logprob rows for {p} positions")
    if not rows.filled.any():
        return out
    # ragged rows keep no arrays (IdRows); the ids must be those asked for, in that order
    if (
        rows.ids is None
        or rows.lps is None
        or rows.ids.shape[1:] != (ids.size,)
        or not (rows.ids == ids).all()
    ):
        raise ValueError(f"{what}: token_ids_logprob ids differ from the ids requested")
    out[rows.filled] = rows.lps
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


def wanted_ids(
    chunk: list[Sample], others: Iterable[list[np.ndarray]], k: int
) -> tuple[list[np.ndarray], int]:
    """Per sample, the other sides' top-k ids from its first scored position on (`others`: one
    list of id arrays per sample), which SGLang is asked for as token_ids_logprob so that the
    union's KL is computed on both sides; none where the answer would pass ENTRY_BUDGET. Also
    how many samples lost theirs that way."""
    out: list[np.ndarray] = []
    dropped = 0
    for s, parts in zip(chunk, others, strict=True):
        ids = np.unique(np.concatenate([np.asarray(p).ravel() for p in parts])) if parts else None
        ids = ids[ids >= 0] if ids is not None else np.zeros(0, np.int64)
        if s.seq.size * (1 + k + ids.size) > ENTRY_BUDGET:
            dropped += 1
            ids = ids[:0]
        out.append(ids)
    return out, dropped


async def greedy_continuations(
    ctx: HelperContext, samples: list[Sample], helper: str, k: int = 0
) -> AsyncIterator[TokensDecoded]:
    """SGLang's greedy continuation of every sample (logprobs from its last prompt position;
    top-k where `k`), kept on the sample and streamed as one TokensDecoded each. Engine errors
    pass to the caller, which knows its phase and its runs."""
    outs = await ctx.client.generate(
        [s.prompt for s in samples],
        ctx.sampling(ctx.max_new_tokens) | {"temperature": 0.0},
        LogprobAsk(logprob_start_len=-1, top_logprobs_num=k),
    )
    for s, r in zip(samples, outs, strict=True):
        s.cont, s.sglang_out = r.output_ids, r
        yield TokensDecoded(helper, ctx.server, s.index, 0, r.output_ids, r.output_logprobs)


async def teacher_forced(
    ctx: HelperContext, chunk: list[Sample], k: int, wanted: list[np.ndarray]
) -> list[GenResult]:
    """SGLang's prefill of each sample's ids (max_new_tokens 0, greedy, logprobs from position
    0), with its top-k and the logprobs of `wanted` at every position."""
    return await ctx.client.generate(
        [s.seq for s in chunk],
        ctx.sampling(0) | {"temperature": 0.0},
        LogprobAsk(
            logprob_start_len=0,
            top_logprobs_num=k,
            token_ids_logprob=[w.tolist() for w in wanted] if k else None,
        ),
    )
