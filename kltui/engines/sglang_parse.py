"""Pure parsers for SGLang `/generate` payloads (non-streamed objects and streamed chunks).

Logprob entries are `[logprob, token_id, text|null]` triples; the first input entry's logprob is
null (entry k scores input_ids[start + k]). Arrays go straight to numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class ParseError(ValueError):
    pass


def triples(entries, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(logprobs float64 with None -> NaN, token ids int64) from a list of triples."""
    if entries is None:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    if not isinstance(entries, list):
        raise ParseError(f"{what} is not a list")
    if not entries:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    try:
        arr = np.array(entries, dtype=object)
        if arr.ndim != 2 or arr.shape[1] < 2:
            raise ParseError(f"{what} entries are not [logprob, token_id, text] triples")
        lp_col = arr[:, 0]
        lp_col[np.equal(lp_col, None)] = np.nan
        lps = lp_col.astype(np.float64)
        ids = arr[:, 1].astype(np.int64)
    except (TypeError, ValueError) as e:
        raise ParseError(f"{what} has a malformed entry ({e})") from None
    return lps, ids


def top_entries(entries) -> list | None:
    """Per position [(token_id, logprob), ...] or None; positions may be null."""
    if entries is None:
        return None
    out = []
    for pos in entries:
        if pos is None:
            out.append(None)
        else:
            out.append([(int(e[1]), float("nan") if e[0] is None else float(e[0])) for e in pos])
    return out


@dataclass(slots=True)
class GenResult:
    index: int
    output_ids: np.ndarray
    output_logprobs: np.ndarray
    input_logprobs: np.ndarray
    input_logprob_ids: np.ndarray
    cached_tokens: int
    prompt_tokens: int
    finish_reason: dict | None
    text: str = ""
    input_top: list | None = None
    output_top: list | None = None
    input_token_ids_logprobs: list | None = None
    meta: dict = field(default_factory=dict)


def _meta(obj: dict, what: str) -> dict:
    if not isinstance(obj, dict):
        raise ParseError(f"{what} is not a JSON object")
    if "error" in obj and "meta_info" not in obj:
        err = obj["error"]
        msg = err.get("message") if isinstance(err, dict) else err
        raise ParseError(f"server reported an error: {msg}")
    meta = obj.get("meta_info")
    if not isinstance(meta, dict):
        raise ParseError(f"{what} has no meta_info object (is this an SGLang server?)")
    return meta


def parse_result(obj: dict, index: int) -> GenResult:
    """One non-streamed response object (or the final state of a stream)."""
    what = f"response item {index}"
    meta = _meta(obj, what)
    out_lp, out_ids_lp = triples(meta.get("output_token_logprobs"), f"{what} output_token_logprobs")
    in_lp, in_ids = triples(meta.get("input_token_logprobs"), f"{what} input_token_logprobs")
    output_ids = obj.get("output_ids")
    if output_ids is None:
        output_ids = out_ids_lp
    try:
        output_ids = np.asarray(output_ids, dtype=np.int64)
    except (TypeError, ValueError):
        raise ParseError(f"{what} output_ids is not a list of integers") from None
    return GenResult(
        index=index,
        output_ids=output_ids,
        output_logprobs=out_lp,
        input_logprobs=in_lp,
        input_logprob_ids=in_ids,
        cached_tokens=int(meta.get("cached_tokens") or 0),
        prompt_tokens=int(meta.get("prompt_tokens") or 0),
        finish_reason=meta.get("finish_reason"),
        text=obj.get("text") or "",
        input_top=top_entries(meta.get("input_top_logprobs")),
        output_top=top_entries(meta.get("output_top_logprobs")),
        input_token_ids_logprobs=top_entries(meta.get("input_token_ids_logprobs")),
        meta={k: v for k, v in meta.items() if not k.endswith(("logprobs", "_logprobs_length"))},
    )


@dataclass(slots=True)
class Delta:
    index: int
    start: int
    token_ids: np.ndarray
    logprobs: np.ndarray


class StreamAssembler:
    """Folds streamed chunks of a batch into per-index results.

    Cumulative mode (SGLang's default): each chunk repeats everything so far, possibly
    coalesced; incremental mode (`--incremental-streaming-output`): each chunk is a delta.
    """

    def __init__(self, n: int, incremental: bool) -> None:
        self.n = n
        self.incremental = incremental
        self.ids: list[list[np.ndarray]] = [[] for _ in range(n)]
        self.lps: list[list[np.ndarray]] = [[] for _ in range(n)]
        self.length = [0] * n
        self.last: list[dict | None] = [None] * n
        self.input_lp: list[tuple[np.ndarray, np.ndarray] | None] = [None] * n

    def feed(self, obj: dict) -> Delta | None:
        idx = obj.get("index", 0 if self.n == 1 else None)
        if not isinstance(idx, int) or not 0 <= idx < self.n:
            raise ParseError(f"stream chunk has a missing or out-of-range index {idx!r}")
        meta = _meta(obj, f"stream chunk for index {idx}")
        lps, lp_ids = triples(meta.get("output_token_logprobs"), "output_token_logprobs")
        ids = obj.get("output_ids")
        ids = lp_ids if ids is None else np.asarray(ids, dtype=np.int64)
        if lps.size and lps.size != ids.size:
            raise ParseError(
                f"stream chunk for index {idx} has {ids.size} output_ids but "
                f"{lps.size} output_token_logprobs"
            )
        if lps.size and not np.array_equal(ids, lp_ids):
            raise ParseError(f"stream chunk for index {idx}: output_ids disagree with logprob ids")
        self.last[idx] = obj
        if meta.get("input_token_logprobs"):
            self.input_lp[idx] = triples(meta["input_token_logprobs"], "input_token_logprobs")
        have = self.length[idx]
        if self.incremental:
            start, new_ids, new_lps = have, ids, lps
        else:
            if ids.size < have:
                raise ParseError(
                    f"cumulative stream for index {idx} shrank from {have} to {ids.size} tokens"
                    " (is the server running with --incremental-streaming-output?)"
                )
            start, new_ids, new_lps = have, ids[have:], lps[have:] if lps.size else lps
        if new_ids.size == 0:
            return None
        self.ids[idx].append(new_ids)
        if new_lps.size:
            self.lps[idx].append(new_lps)
        self.length[idx] = have + new_ids.size
        return Delta(idx, start, new_ids, new_lps)

    def results(self) -> list[GenResult]:
        missing = [i for i, o in enumerate(self.last) if o is None]
        if missing:
            raise ParseError(f"stream ended with no data for batch index(es) {missing[:8]}")
        out = []
        for i, obj in enumerate(self.last):
            meta = obj["meta_info"]
            ids = np.concatenate(self.ids[i]) if self.ids[i] else np.zeros(0, dtype=np.int64)
            lps = np.concatenate(self.lps[i]) if self.lps[i] else np.zeros(0)
            in_lp, in_ids = self.input_lp[i] or (np.zeros(0), np.zeros(0, dtype=np.int64))
            if meta.get("finish_reason") is None:
                raise ParseError(f"stream for index {i} ended before finish_reason was set")
            out.append(
                GenResult(
                    index=i,
                    output_ids=ids,
                    output_logprobs=lps,
                    input_logprobs=in_lp,
                    input_logprob_ids=in_ids,
                    cached_tokens=int(meta.get("cached_tokens") or 0),
                    prompt_tokens=int(meta.get("prompt_tokens") or 0),
                    finish_reason=meta.get("finish_reason"),
                    text=obj.get("text") or "",
                    meta={k: v for k, v in meta.items() if not k.endswith("logprobs")},
                )
            )
        return out
