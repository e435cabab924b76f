"""Folding scheduler progress into SGLang's `/generate` response objects.

Key order and field set follow captured SGLang 0.5.23 responses (see
shared/reference/samples): `{text, output_ids, meta_info}` plus `index` for streamed batch
items, meta_info with `id, finish_reason, prompt_tokens, weight_version, num_retractions`, the
logprob fields when asked for, then `reasoning_tokens, completion_tokens, cached_tokens`, and
`weight_versions` / `e2e_latency` once finished.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from kltui.reference.engine import GenRequest, PrefillInfo, Progress, TopRow

WEIGHT_VERSION = "default"


class ItemState:
    """Everything the client has been told, or will be told, about one output."""

    def __init__(self, req: GenRequest, index: int, received: float) -> None:
        self.req = req
        self.index = index
        self.received = received
        self.output_ids: list[int] = []
        self.logprobs: list[float] = []
        self.top: list[TopRow] = []
        self.ids_logprobs: list[TopRow] = []
        self.prefill: PrefillInfo | None = None
        self.finish_reason: dict | None = None
        self.finished_at: float | None = None
        # Streaming bookkeeping: how much has been sent, for deltas and stream_interval.
        self.sent_tokens = 0
        self.sent_text = ""
        self.chunks_sent = 0

    def fold(self, p: Progress) -> None:
        if p.prefill is not None:
            self.prefill = p.prefill
        self.output_ids += p.new_ids
        self.logprobs += p.new_logprobs
        self.top += p.new_top
        self.ids_logprobs += p.new_ids_logprobs
        if p.finish_reason is not None:
            self.finish_reason = p.finish_reason
            self.finished_at = time.perf_counter()

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    @property
    def aborted_with(self) -> dict | None:
        fr = self.finish_reason
        return fr if fr and fr.get("type") == "abort" else None


class Renderer:
    def __init__(self, token_text: Sequence[str], decode, *, with_text: bool = True) -> None:
        self.token_text = token_text
        self.decode = decode  # (ids, skip_special_tokens) -> str
        # False: --skip-tokenizer-init, whose answers (BatchTokenIDOutput) have no `text` key
        # and whose logprob entries carry null text even with return_text_in_logprobs
        self.has_tokenizer = with_text

    def _triple(self, lp: float | None, token: int, with_text: bool) -> list:
        return [lp, token, self.token_text[token] if with_text else None]

    def _rows(self, rows: Sequence[TopRow | None], with_text: bool) -> list:
        return [
            None if row is None else [self._triple(lp, t, with_text) for lp, t in row]
            for row in rows
        ]

    def text(self, st: ItemState) -> str:
        s = st.req.sampling
        ids = st.output_ids
        fr = st.finish_reason or {}
        if fr.get("type") == "stop" and not s.no_stop_trim and isinstance(fr.get("matched"), int):
            ids = ids[:-1]
        text = self.decode(ids, s.skip_special_tokens)
        if fr.get("type") == "stop" and not s.no_stop_trim and isinstance(fr.get("matched"), str):
            cut = text.find(fr["matched"])
            text = text[:cut] if cut != -1 else text
        return text

    def response_json(
        self,
        st: ItemState,
        *,
        with_text: bool,
        incremental: bool = False,
        index: int | None = None,
        first_chunk: bool = True,
    ) -> dict:
        """One response object: the final non-streamed one, or a streamed chunk.

        In incremental mode the output-side fields (text, output_ids, output logprobs) hold only
        what was not sent before; prompt-side fields always hold everything.
        """
        with_text = with_text and self.has_tokenizer
        start = st.sent_tokens if incremental else 0
        full_text = self.text(st) if self.has_tokenizer else ""
        text = full_text
        if incremental:
            text = (
                full_text[len(st.sent_text) :] if full_text.startswith(st.sent_text) else full_text
            )
        meta: dict = {
            "id": st.req.rid,
            "finish_reason": st.finish_reason,
            "prompt_tokens": len(st.req.input_ids),
            "weight_version": WEIGHT_VERSION,
            "num_retractions": 0,
        }
        if st.req.return_logprob:
            meta.update(self._logprob_fields(st, with_text, start))
        meta.update(self._usage_fields(st, first_chunk))
        obj = {"text": text, "output_ids": st.output_ids[start:], "meta_info": meta}
        if not self.has_tokenizer:
            del obj["text"]
        if index is not None:
            obj["index"] = index
        st.sent_tokens = len(st.output_ids)
        st.sent_text = full_text
        st.chunks_sent += 1
        return obj

    def _logprob_fields(self, st: ItemState, with_text: bool, start: int) -> dict[str, object]:
        """The meta_info logprob keys: the prompt's from `logprob_start_len` (always all of
        them), the output's from `start` (what a streamed chunk has not sent yet)."""
        req = st.req
        info = st.prefill or PrefillInfo(cached_tokens=0)
        lsl = req.logprob_start_len
        in_ids = req.input_ids[lsl:] if lsl >= 0 else []
        out = [
            self._triple(lp, t, with_text)
            for lp, t in zip(st.logprobs[start:], st.output_ids[start:], strict=True)
        ]
        fields: dict[str, object] = {
            "input_token_logprobs": [
                self._triple(lp, t, with_text)
                for lp, t in zip(info.input_logprobs, in_ids, strict=False)
            ],
            "output_token_logprobs": out,
            "output_token_logprobs_length": len(out),
        }
        if req.top_logprobs_num > 0:
            fields["input_top_logprobs"] = self._rows(info.input_top, with_text)
            fields["output_top_logprobs"] = self._rows(st.top[start:], with_text)
        if req.token_ids_logprob is not None:
            fields["input_token_ids_logprobs"] = self._rows(info.input_ids_logprobs, with_text)
            fields["output_token_ids_logprobs"] = self._rows(st.ids_logprobs[start:], with_text)
        return fields

    def _usage_fields(self, st: ItemState, first_chunk: bool) -> dict[str, object]:
        """The meta_info keys after the logprobs: token counts, cache use and timing, in
        SGLang's order (weight_versions and e2e_latency only once the request finished)."""
        fields: dict[str, object] = {
            "reasoning_tokens": 0,
            "completion_tokens": len(st.output_ids),
            "cached_tokens": st.prefill.cached_tokens if st.prefill else 0,
        }
        if st.finished:
            fields["weight_versions"] = [
                {"version": WEIGHT_VERSION, "start": 0, "end": len(st.output_ids)}
            ]
        fields["cached_tokens_details"] = None
        fields["dp_rank"] = None
        if st.finished:
            fields["e2e_latency"] = (st.finished_at or time.perf_counter()) - st.received
        if first_chunk:
            fields["response_sent_to_client_ts"] = time.time()
        return fields
