"""Pure parsers for SGLang `/generate` payloads (non-streamed objects and streamed chunks).

Logprob entries are `[logprob, token_id, text|null]` triples; the first input entry's logprob is
null (entry k scores input_ids[start + k]). Arrays go straight to numpy.

Payloads are untrusted: whatever JSON arrives, these functions return a result or raise
ParseError, never anything else, so a hostile server cannot crash a run with a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np


class ParseError(ValueError):
    """An SGLang answer that does not have the expected shape."""

    pass


_CONVERSION_ERRORS = (TypeError, ValueError, OverflowError)


def int_array(value, what: str) -> np.ndarray:
    """A JSON list of token ids as int64; anything else is a ParseError."""
    if not isinstance(value, list):
        raise ParseError(f"{what} is not a list of token ids")
    if not value:
        return np.zeros(0, dtype=np.int64)
    try:
        arr = np.asarray(value)
        if arr.ndim != 1 or arr.dtype.kind not in "iub":
            raise ParseError(f"{what} is not a list of integer token ids")
        return arr.astype(np.int64, casting="unsafe" if arr.dtype.kind == "b" else "same_kind")
    except _CONVERSION_ERRORS as e:
        if isinstance(e, ParseError):
            raise
        raise ParseError(f"{what} is not a list of integer token ids ({e})") from None


def triples(entries, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(logprobs float64 with None -> NaN, token ids int64) from a list of triples."""
    if entries is None:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    if not isinstance(entries, list):
        raise ParseError(f"{what} is not a list")
    if not entries:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    if not all(isinstance(e, list | tuple) for e in entries) or len({len(e) for e in entries}) != 1:
        raise ParseError(f"{what} entries are not [logprob, token_id, text] triples")
    # by column, not through one object array of every entry: a replay's answer holds tens of
    # thousands of entries, read between the gate's requests (1.5x faster, issue 59)
    columns = list(zip(*entries, strict=True))
    if len(columns) < 2:
        raise ParseError(f"{what} entries are not [logprob, token_id, text] triples")
    try:
        lps = np.array(columns[0], dtype=np.float64)  # None -> NaN
        if lps.ndim != 1:
            raise TypeError("a logprob is not a number")
        ids = np.array(columns[1])
        if ids.ndim != 1 or ids.dtype.kind != "i":  # anything but plain integers: checked
            ids = _checked_ids(np.array(columns[1], dtype=object), what)
        if ids.ndim != 1:
            raise TypeError("a token id is not a number")
    except _CONVERSION_ERRORS as e:
        if isinstance(e, ParseError):
            raise
        raise ParseError(f"{what} has a malformed entry ({e})") from None
    return lps, ids.astype(np.int64, copy=False)


def _checked_ids(id_col: np.ndarray, what: str) -> np.ndarray:
    """Token ids from an object column: astype truncates 3.7 to 3 and reads "5" as 5, so each
    id must equal its value as a float (an integer)."""
    ids = id_col.astype(np.int64)
    if not np.array_equal(ids, id_col.astype(np.float64)):
        raise ParseError(f"{what} has a token id that is not an integer")
    return ids


def top_entries(entries, what: str = "top logprobs") -> list | None:
    """Per position [(token_id, logprob), ...] or None; positions may be null."""
    if entries is None:
        return None
    if not isinstance(entries, list):
        raise ParseError(f"{what} is not a list")
    out: list[list[tuple[int, float]] | None] = []
    try:
        for pos in entries:
            if pos is None:
                out.append(None)
            else:
                out.append(
                    [(int(e[1]), float("nan") if e[0] is None else float(e[0])) for e in pos]
                )
    except (*_CONVERSION_ERRORS, IndexError, KeyError) as e:
        raise ParseError(f"{what} has a malformed entry ({e})") from None
    return out


@dataclass(slots=True, frozen=True)
class IdRows:
    """SGLang's input_token_ids_logprobs as arrays: which positions carry a row, and per row
    the ids asked for and their logprobs (None -> NaN). Ragged or malformed rows that still
    parse keep `ids` and `lps` None: no table can be read from them."""

    filled: np.ndarray  # bool [P]
    ids: np.ndarray | None  # int64 [F, M], F = filled.sum()
    lps: np.ndarray | None  # float64 [F, M]

    def __len__(self) -> int:
        return int(self.filled.size)


def id_rows(entries, what: str = "input_token_ids_logprobs") -> IdRows | None:
    """input_token_ids_logprobs ([logprob, id, text] per id asked, per position; positions may
    be null) as IdRows, in one numpy conversion: answers of millions of entries are common
    (cross_engine asks for the other engine's top-k ids at every position)."""
    if entries is None:
        return None
    if not isinstance(entries, list):
        raise ParseError(f"{what} is not a list")
    filled = np.fromiter((e is not None for e in entries), dtype=bool, count=len(entries))
    body = [e for e in entries if e is not None]
    if not body:
        return IdRows(filled, np.zeros((0, 0), np.int64), np.zeros((0, 0)))
    try:
        arr = np.asarray(body, dtype=np.float64)  # a null logprob or text reads as NaN
        if arr.ndim == 3 and arr.shape[2] >= 2:
            ids_f = arr[:, :, 1]
            with np.errstate(invalid="ignore"):
                ids = ids_f.astype(np.int64)
            # astype truncates 3.7 to 3 and a null id is NaN: an id must have been an integer
            if not np.array_equal(ids, ids_f):
                raise ParseError(f"{what} has a token id that is not an integer")
            return IdRows(filled, ids, np.ascontiguousarray(arr[:, :, 0]))
    except _CONVERSION_ERRORS as e:
        if isinstance(e, ParseError):
            raise
    # text in the entries, ragged rows or a malformed entry: the per-entry parse says which
    rows = top_entries(entries, what) or []
    lens = {len(r) for r in rows if r is not None}
    if len(lens) != 1:
        return IdRows(filled, None, None)
    pairs = np.asarray([r for r in rows if r is not None], dtype=np.float64).reshape(
        len(body), lens.pop(), 2
    )
    return IdRows(filled, pairs[:, :, 0].astype(np.int64), np.ascontiguousarray(pairs[:, :, 1]))


@dataclass(slots=True)
class GenResult:
    """One batch index's generated tokens, their logprobs and the prompt's logprobs."""

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
    input_token_ids_logprobs: IdRows | None = None
    meta: dict = field(default_factory=dict)
    input_texts: list | None = None  # with return_text_in_logprobs: the text of each input token
    input_top_texts: dict | None = None  # with return_text_in_logprobs: top-k token id -> text
    # positions of input_token_logprobs whose reported id differs from the id sent there, in a
    # way a per-id server quirk explains (kltui.engines.idcheck); None when all are equal
    id_mismatch: np.ndarray | None = None
    # the request id (`rid`) this answer's request was sent with; SGLang echoes it as
    # meta_info.id (tokenizer_manager), which ties the answer to its prompt
    rid: str | None = None
    # output_token_logprobs entries a scoring prefill (max_new_tokens 0) answered with no
    # output token, dropped by the client's checks (real SGLang 0.5.23 did this under load)
    stray_output_logprobs: int = 0

    @property
    def echoed_rid(self) -> bool:
        """The answer carries the request id it was sent with (meta_info.id == rid)."""
        return self.rid is not None and self.meta.get("id") == self.rid

    @property
    def prompt_verified(self) -> bool:
        """Something in the answer ties it to its prompt: the echoed request id, or a
        prompt_tokens count (checked against the prompt by the client)."""
        return self.echoed_rid or self.prompt_tokens > 0


def _meta(obj: dict, what: str) -> dict:
    if not isinstance(obj, dict):
        raise ParseError(f"{what} is not a JSON object")
    if "error" in obj and "meta_info" not in obj:
        err = obj["error"]
        msg = err.get("message", err) if isinstance(err, dict) else err
        raise ParseError(f"server reported an error: {msg}")
    meta = obj.get("meta_info")
    if not isinstance(meta, dict):
        raise ParseError(f"{what} has no meta_info object (is this an SGLang server?)")
    return meta


def _count(meta: dict, key: str, what: str) -> int:
    value = meta.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParseError(f"{what} meta_info.{key} is not a count: {str(value)[:40]!r}")
    return value


def _finish_reason(meta: dict, what: str) -> dict | None:
    fr = meta.get("finish_reason")
    if fr is None or isinstance(fr, dict):
        return fr
    if isinstance(fr, str):  # some builds and proxies flatten it to the type name
        return {"type": fr}
    raise ParseError(f"{what} meta_info.finish_reason is neither an object nor a string")


def _text(obj: dict) -> str:
    text = obj.get("text")
    return text if isinstance(text, str) else ""


def _plain_meta(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if not k.endswith(("logprobs", "_logprobs_length"))}


def _result(
    index: int,
    obj: dict,
    meta: dict,
    what: str,
    output: tuple[np.ndarray, np.ndarray],
    inputs: tuple[np.ndarray, np.ndarray],
    *,
    finished: bool,
) -> GenResult:
    """One index's GenResult from its arrays and its (last) response object; `finished`: a
    missing finish_reason is an error (a stream that ended early)."""
    cached_tokens = _count(meta, "cached_tokens", what)
    prompt_tokens = _count(meta, "prompt_tokens", what)
    finish = _finish_reason(meta, what)
    if finished and finish is None:
        raise ParseError(f"{what} ended before finish_reason was set")
    return GenResult(
        index=index,
        output_ids=output[0],
        output_logprobs=output[1],
        input_logprobs=inputs[0],
        input_logprob_ids=inputs[1],
        cached_tokens=cached_tokens,
        prompt_tokens=prompt_tokens,
        finish_reason=finish,
        text=_text(obj),
        meta=_plain_meta(meta),
    )


def parse_result(obj: dict, index: int) -> GenResult:
    """One non-streamed response object (or the final state of a stream)."""
    what = f"response item {index}"
    meta = _meta(obj, what)
    out_lp, out_ids_lp = triples(meta.get("output_token_logprobs"), f"{what} output_token_logprobs")
    in_lp, in_ids = triples(meta.get("input_token_logprobs"), f"{what} input_token_logprobs")
    output_ids = obj.get("output_ids")
    if output_ids is None:
        output_ids = out_ids_lp
    else:
        output_ids = int_array(output_ids, f"{what} output_ids")
        if out_lp.size == output_ids.size and not np.array_equal(output_ids, out_ids_lp):
            k = int(np.argmax(output_ids != out_ids_lp))
            raise ParseError(
                f"{what}: output_ids[{k}]={int(output_ids[k])} but output_token_logprobs[{k}] "
                f"scores token {int(out_ids_lp[k])}"
            )
    base = _result(index, obj, meta, what, (output_ids, out_lp), (in_lp, in_ids), finished=False)
    return replace(
        base,
        input_top=top_entries(meta.get("input_top_logprobs"), f"{what} input_top_logprobs"),
        output_top=top_entries(meta.get("output_top_logprobs"), f"{what} output_top_logprobs"),
        input_token_ids_logprobs=id_rows(
            meta.get("input_token_ids_logprobs"), f"{what} input_token_ids_logprobs"
        ),
        input_texts=(in_texts := texts(meta.get("input_token_logprobs"))),
        input_top_texts=top_texts(meta.get("input_top_logprobs")) if in_texts else None,
    )


def top_texts(entries) -> dict[int, str]:
    """token id -> text from top-k entries [logprob, id, text] (untrusted text)."""
    out: dict[int, str] = {}
    if not isinstance(entries, list):
        return out
    for pos in entries:
        if not isinstance(pos, list):
            continue
        for e in pos:
            if (
                isinstance(e, list)
                and len(e) >= 3
                and isinstance(e[1], int)
                and not isinstance(e[1], bool)
                and isinstance(e[2], str)
            ):
                out[e[1]] = e[2]
    return out


def texts(entries) -> list | None:
    """Third elements of logprob triples (token text, untrusted), or None when not sent."""
    if not isinstance(entries, list) or not entries:
        return None
    first = entries[-1]
    if not isinstance(first, list) or len(first) < 3 or not isinstance(first[2], str):
        return None
    try:
        col = np.array(entries, dtype=object)[:, 2]
    except (ValueError, IndexError):
        return None
    return [t if isinstance(t, str) else None for t in col.tolist()]


@dataclass(slots=True)
class Delta:
    """The tokens a stream chunk added to one batch index since the previous chunk."""

    index: int
    start: int
    token_ids: np.ndarray
    logprobs: np.ndarray


class StreamAssembler:
    """Folds streamed chunks of a batch into per-index results.

    Cumulative mode (SGLang's default): each chunk repeats everything so far, possibly
    coalesced; incremental mode (`--incremental-streaming-output`): each chunk is a delta.
    With `max_tokens`, a server that streams past max_new_tokens is stopped at the first chunk
    that does, instead of being read (and held in memory) to the end.
    """

    def __init__(self, n: int, incremental: bool, max_tokens: int | None = None) -> None:
        self.n = n
        self.incremental = incremental
        self.max_tokens = max_tokens
        self.ids: list[list[np.ndarray]] = [[] for _ in range(n)]
        self.lps: list[list[np.ndarray]] = [[] for _ in range(n)]
        self.length = [0] * n
        self.last: list[dict | None] = [None] * n
        self.rid: list[object] = [None] * n
        self.input_lp: list[tuple[np.ndarray, np.ndarray] | None] = [None] * n

    def feed(self, obj: dict) -> Delta | None:
        """Take one stream chunk; return the tokens it added, if any."""
        if not isinstance(obj, dict):
            raise ParseError("stream chunk is not a JSON object")
        idx = obj.get("index", 0 if self.n == 1 else None)
        if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < self.n:
            raise ParseError(f"stream chunk has a missing or out-of-range index {idx!r}")
        what = f"stream chunk for index {idx}"
        meta = _meta(obj, what)
        have = self.length[idx]
        skip, raw_ids, raw_lp = self._tail(idx, obj.get("output_ids"), meta)
        lps, lp_ids = triples(raw_lp, f"{what} output_token_logprobs")
        ids = lp_ids if raw_ids is None else int_array(raw_ids, f"{what} output_ids")
        if lps.size and lps.size != ids.size:
            raise ParseError(
                f"stream chunk for index {idx} has {skip + ids.size} output_ids but "
                f"{skip + lps.size} output_token_logprobs"
            )
        if lps.size and not np.array_equal(ids, lp_ids):
            raise ParseError(f"stream chunk for index {idx}: output_ids disagree with logprob ids")
        self._same_request(idx, meta.get("id"))
        _finish_reason(meta, what)
        _count(meta, "cached_tokens", what)
        _count(meta, "prompt_tokens", what)
        self.last[idx] = obj
        if meta.get("input_token_logprobs"):
            self.input_lp[idx] = triples(
                meta["input_token_logprobs"], f"{what} input_token_logprobs"
            )
        new_ids, new_lps = self._new_tokens(idx, ids, lps)
        if new_ids.size == 0:
            return None
        if self.max_tokens is not None and have + new_ids.size > self.max_tokens:
            raise ParseError(
                f"index {idx} streamed {have + new_ids.size} tokens but max_new_tokens is "
                f"{self.max_tokens}"
            )
        self.ids[idx].append(new_ids)
        if new_lps.size:
            self.lps[idx].append(new_lps)
        self.length[idx] = have + new_ids.size
        return Delta(idx, have, new_ids, new_lps)

    def _tail(self, idx: int, raw_ids: object, meta: dict) -> tuple[int, object, object]:
        """(tokens skipped, output_ids, output_token_logprobs) of a chunk still to convert.
        A cumulative chunk repeats every token so far: only the tail is converted (plus the
        last known token, to check it was not rewritten), so a stream costs O(n), not O(n^2)."""
        have = self.length[idx]
        raw_lp = meta.get("output_token_logprobs")
        if self.incremental or not have:
            return 0, raw_ids, raw_lp
        total = len(raw_ids) if isinstance(raw_ids, list) else None
        if total is None and isinstance(raw_lp, list):
            total = len(raw_lp)
        if total is not None and total < have:
            raise ParseError(
                f"cumulative stream for index {idx} shrank from {have} to {total} tokens"
                " (is the server running with --incremental-streaming-output?)"
            )
        skip = have - 1
        if isinstance(raw_lp, list) and raw_lp:
            raw_lp = raw_lp[skip:]
        if isinstance(raw_ids, list):
            raw_ids = raw_ids[skip:]
        return skip, raw_ids, raw_lp

    def _same_request(self, idx: int, rid: object) -> None:
        """One request keeps one id for its whole stream; a change means chunks of two requests
        were tagged with the same index."""
        if rid is None:
            return
        if self.rid[idx] is None:
            self.rid[idx] = rid
        elif rid != self.rid[idx]:
            raise ParseError(
                f"stream chunks for index {idx} come from two requests "
                f"({str(self.rid[idx])[:40]!r} and {str(rid)[:40]!r}): the index is wrong"
            )

    def _new_tokens(
        self, idx: int, ids: np.ndarray, lps: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ids and logprobs a chunk adds: all of an incremental one; a cumulative one's
        tail after the last known token, which must be unchanged."""
        if self.incremental:
            return ids, lps
        have = self.length[idx]
        if have and (ids.size == 0 or ids[0] != self.ids[idx][-1][-1]):
            got = "nothing" if ids.size == 0 else int(ids[0])
            raise ParseError(
                f"cumulative stream for index {idx} rewrote token {have - 1} "
                f"({int(self.ids[idx][-1][-1])} -> {got})"
            )
        known = 1 if have else 0
        return ids[known:], (lps[known:] if lps.size else lps)

    def results(self) -> list[GenResult]:
        """The complete per-index results once the stream has ended."""
        missing = [i for i, o in enumerate(self.last) if o is None]
        if missing:
            raise ParseError(f"stream ended with no data for batch index(es) {missing[:8]}")
        out = []
        # `missing` is empty: every index has its last object, in order
        for i, obj in enumerate(o for o in self.last if o is not None):
            what = f"stream for index {i}"
            meta = obj["meta_info"]
            ids = np.concatenate(self.ids[i]) if self.ids[i] else np.zeros(0, dtype=np.int64)
            lps = np.concatenate(self.lps[i]) if self.lps[i] else np.zeros(0)
            in_lp, in_ids = self.input_lp[i] or (np.zeros(0), np.zeros(0, dtype=np.int64))
            out.append(_result(i, obj, meta, what, (ids, lps), (in_lp, in_ids), finished=True))
        return out
