"""Pure parsers for vLLM `/v1/completions` responses with token-id prompts and logprobs.

Shapes (vLLM 0.32, `vllm/entrypoints/openai/completion/serving.py`):
- `choices[i].prompt_logprobs`: `[null, {"<id>": {"logprob", "rank", "decoded_token"}}, ...]`.
  Entry p scores prompt token p; entry 0 is null (no context). Each dict holds the actual token
  (any rank) plus the top-K (ranks 1..K), so K or K+1 entries.
- `choices[i].logprobs`: `tokens`, `token_logprobs`, `top_logprobs` (dicts of K or K+1 entries:
  the sampled token plus the top-K). With `return_tokens_as_token_ids` every token and key is
  `"token_id:<id>"`; without it keys are decoded strings that can collide, so kltui always sets it.
- `choices[i].token_ids` / `prompt_token_ids`: only with `return_token_ids` (servers from
  August 2025 on). Older servers ignore the field; output ids then come from `token_id:N`.
- Logprobs are clamped to -9999.0 where they are -inf; kltui reads any value <= -9999 as -inf.

Every array is numpy; top-k tables are dense `[positions, K]` matrices sorted by descending
logprob, padded with id -1 and logprob -inf.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VLLM_LOGPROB_FLOOR = -9999.0
TOKEN_ID_PREFIX = "token_id:"


class ParseError(ValueError):
    """A vLLM answer that does not have the expected shape."""

    pass


def unclamp(lp: np.ndarray) -> np.ndarray:
    """vLLM writes -inf as -9999.0 (JSON has no infinity): read it back as -inf."""
    lp = np.asarray(lp, dtype=np.float64)
    lp[lp <= VLLM_LOGPROB_FLOOR] = -np.inf
    return lp


def token_id_of(s: str, what: str) -> int:
    """The token id of a 'token_id:N' string."""
    if not isinstance(s, str) or not s.startswith(TOKEN_ID_PREFIX):
        raise ParseError(
            f"{what}: {str(s)[:40]!r} is not a 'token_id:N' string (the server ignored "
            "return_tokens_as_token_ids, so token ids cannot be recovered)"
        )
    try:
        return int(s[len(TOKEN_ID_PREFIX) :])
    except ValueError:
        raise ParseError(f"{what}: {s[:40]!r} has no integer after 'token_id:'") from None


@dataclass(slots=True)
class TopK:
    """Per-position top-k alternatives as dense matrices (id -1 / -inf pad short rows)."""

    ids: np.ndarray  # int64 [P, K]
    lp: np.ndarray  # float64 [P, K], descending along axis 1

    @property
    def k(self) -> int:
        """The number of alternatives per position."""
        return int(self.ids.shape[1])

    def as_lists(self) -> list[list[tuple[int, float]]]:
        """[(id, logprob), ...] per position, for events and the drill-down."""
        ids, lp = self.ids.tolist(), self.lp.tolist()
        return [
            [(i, v) for i, v in zip(row_i, row_v, strict=True) if i >= 0]
            for row_i, row_v in zip(ids, lp, strict=True)
        ]


def empty_topk(p: int, k: int) -> TopK:
    """A TopK of p positions and k padding alternatives each."""
    return TopK(np.full((p, k), -1, dtype=np.int64), np.full((p, k), -np.inf))


def dense_topk(pos: np.ndarray, ids: np.ndarray, lp: np.ndarray, p: int, k: int) -> TopK:
    """Scatters (position, id, logprob) entries into [p, k], keeping each row's k best."""
    out = empty_topk(p, k)
    if k == 0 or pos.size == 0:
        return out
    order = np.lexsort((ids, -lp, pos))  # by position, then descending logprob, then id
    pos, ids, lp = pos[order], ids[order], lp[order]
    starts = np.searchsorted(pos, pos, side="left")
    slot = np.arange(pos.size) - starts
    keep = slot < k
    out.ids[pos[keep], slot[keep]] = ids[keep]
    out.lp[pos[keep], slot[keep]] = lp[keep]
    return out


@dataclass(slots=True)
class PromptLogprobs:
    """vLLM's view of every prompt position; position 0 has no logprob (NaN, rank -1)."""

    token_ids: np.ndarray  # int64 [L]
    lp: np.ndarray  # float64 [L], NaN at 0
    rank: np.ndarray  # int64 [L], -1 at 0
    top: TopK  # [L, K], row 0 empty


def parse_prompt_logprobs(entries, prompt_ids: np.ndarray, k: int, what: str) -> PromptLogprobs:
    """vLLM's prompt_logprobs list parsed against the prompt ids that were sent."""
    if not isinstance(entries, list):
        raise ParseError(
            f"{what}: no prompt_logprobs list (is this a vLLM server? prompt_logprobs needs "
            "vLLM's completions API)"
        )
    n = int(prompt_ids.size)
    if len(entries) != n:
        raise ParseError(f"{what}: {len(entries)} prompt_logprobs entries for {n} prompt tokens")
    pos_l: list[int] = []
    id_l: list[int] = []
    lp_l: list[float] = []
    rank_l: list[int] = []
    try:
        for p, d in enumerate(entries):
            if d is None:
                continue
            for key, v in d.items():
                pos_l.append(p)
                id_l.append(int(key))
                lp_l.append(v["logprob"])
                rank_l.append(v.get("rank") or 0)
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise ParseError(f"{what}: malformed prompt_logprobs entry ({e!r})") from None
    pos = np.asarray(pos_l, dtype=np.int64)
    ids = np.asarray(id_l, dtype=np.int64)
    lp = unclamp(np.asarray(lp_l, dtype=np.float64))
    rank = np.asarray(rank_l, dtype=np.int64)
    present = np.zeros(n, dtype=bool)
    present[pos] = True
    if n and present[0]:
        raise ParseError(f"{what}: prompt_logprobs[0] is not null (misaligned positions?)")
    if n > 1 and not present[1:].all():
        missing = int(np.argmin(present[1:])) + 1
        raise ParseError(f"{what}: prompt_logprobs[{missing}] is null")
    actual = ids == prompt_ids[pos]
    if np.count_nonzero(actual) != max(n - 1, 0) or (
        n > 1 and np.unique(pos[actual]).size != n - 1
    ):
        bad = np.setdiff1d(np.arange(1, n), pos[actual])
        p = int(bad[0]) if bad.size else -1
        raise ParseError(
            f"{what}: prompt_logprobs[{p}] does not hold the prompt token "
            f"{int(prompt_ids[p]) if p >= 0 else '?'} (misaligned prompt?)"
        )
    tok_lp = np.full(n, np.nan)
    tok_rank = np.full(n, -1, dtype=np.int64)
    tok_lp[pos[actual]] = lp[actual]
    tok_rank[pos[actual]] = rank[actual]
    # The actual token is one of the top-K only when its rank says so.
    in_top = (rank >= 1) & (rank <= k)
    top = dense_topk(pos[in_top], ids[in_top], lp[in_top], n, k)
    return PromptLogprobs(prompt_ids, tok_lp, tok_rank, top)


@dataclass(slots=True)
class OutputLogprobs:
    """The generated tokens, their logprobs and top-k alternatives."""

    token_ids: np.ndarray  # int64 [T]
    lp: np.ndarray  # float64 [T]
    top: TopK  # [T, K]


def parse_output_logprobs(
    logprobs: dict | None, token_ids: np.ndarray | None, k: int, what: str
) -> OutputLogprobs:
    """Generated tokens, from `token_ids` or, on older servers, from 'token_id:N' strings."""
    if logprobs is None:
        if token_ids is None:
            raise ParseError(f"{what}: neither token_ids nor logprobs in the choice")
        t = int(token_ids.size)
        return OutputLogprobs(token_ids, np.full(t, np.nan), empty_topk(t, k))
    if not isinstance(logprobs, dict):
        raise ParseError(f"{what}: logprobs is not an object")
    tokens = logprobs.get("tokens") or []
    lps = logprobs.get("token_logprobs") or []
    tops = logprobs.get("top_logprobs") or []
    if len(tokens) != len(lps):
        raise ParseError(f"{what}: {len(tokens)} tokens but {len(lps)} token_logprobs")
    from_strings = np.asarray(
        [token_id_of(s, f"{what} logprobs.tokens[{i}]") for i, s in enumerate(tokens)],
        dtype=np.int64,
    )
    if token_ids is None:
        token_ids = from_strings
    elif not np.array_equal(token_ids, from_strings):
        raise ParseError(f"{what}: token_ids disagree with the 'token_id:N' logprob tokens")
    t = int(token_ids.size)
    lp = unclamp(np.asarray([np.nan if v is None else v for v in lps], dtype=np.float64))
    top = empty_topk(t, k)
    if tops:
        if len(tops) != t:
            raise ParseError(f"{what}: {len(tops)} top_logprobs for {t} tokens")
        pos_l, id_l, lp_l = [], [], []
        for i, d in enumerate(tops):
            for key, v in (d or {}).items():
                pos_l.append(i)
                id_l.append(token_id_of(key, f"{what} top_logprobs[{i}]"))
                lp_l.append(v)
        # The sampled token is in every dict; the k best entries are the top-k either way.
        top = dense_topk(
            np.asarray(pos_l, dtype=np.int64),
            np.asarray(id_l, dtype=np.int64),
            unclamp(np.asarray(lp_l, dtype=np.float64)),
            t,
            k,
        )
    return OutputLogprobs(token_ids, lp, top)


@dataclass(slots=True)
class Completion:
    """One parsed completion choice: prompt and output logprobs, finish reason, text."""

    index: int
    prompt: PromptLogprobs | None
    output: OutputLogprobs
    finish_reason: str | None
    text: str
    ids_from: str  # "token_ids" (return_token_ids honoured) or "token_id strings" (older server)


def _int_array(v, what: str) -> np.ndarray:
    try:
        return np.asarray(v, dtype=np.int64).reshape(-1)
    except (TypeError, ValueError):
        raise ParseError(f"{what} is not a list of integers") from None


def parse_choice(
    choice: dict, sent_prompt: np.ndarray, *, prompt_k: int | None, k: int, what: str
) -> Completion:
    """One completion choice parsed and checked against the prompt that was sent."""
    if not isinstance(choice, dict):
        raise ParseError(f"{what} is not a JSON object")
    prompt_ids = sent_prompt
    if choice.get("prompt_token_ids") is not None:
        prompt_ids = _int_array(choice["prompt_token_ids"], f"{what} prompt_token_ids")
        if not np.array_equal(prompt_ids, sent_prompt):
            raise ParseError(
                f"{what}: the server scored {prompt_ids.size} prompt tokens that differ from the "
                f"{sent_prompt.size} ids sent (did it add or drop special tokens?)"
            )
    token_ids = None
    if choice.get("token_ids") is not None:
        token_ids = _int_array(choice["token_ids"], f"{what} token_ids")
    output = parse_output_logprobs(choice.get("logprobs"), token_ids, k, what)
    prompt = None
    if prompt_k is not None:
        prompt = parse_prompt_logprobs(choice.get("prompt_logprobs"), prompt_ids, prompt_k, what)
    return Completion(
        index=int(choice.get("index", 0)),
        prompt=prompt,
        output=output,
        finish_reason=choice.get("finish_reason"),
        text=choice.get("text") or "",
        ids_from="token_ids" if token_ids is not None else "token id strings",
    )


def parse_completions(
    body, sent: list[np.ndarray], *, prompt_k: int | None, k: int
) -> list[Completion]:
    """A whole non-streamed response for a batch of token-id prompts, in prompt order."""
    if not isinstance(body, dict):
        raise ParseError("response is not a JSON object")
    choices = body.get("choices")
    if not isinstance(choices, list):
        raise ParseError("response has no choices list (is this an OpenAI-compatible server?)")
    if len(choices) != len(sent):
        raise ParseError(f"{len(choices)} choices for a batch of {len(sent)} prompts")
    by_index = sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, dict) else 0)
    return [
        parse_choice(c, sent[i], prompt_k=prompt_k, k=k, what=f"choice {i}")
        for i, c in enumerate(by_index)
    ]
