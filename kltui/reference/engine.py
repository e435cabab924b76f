"""One server step of real arithmetic: prefill a set of admitted requests, or decode one token for
every running request, with the radix cache, logprobs, sampling and the planted faults.

The scheduler thread is the only caller; nothing here is thread-safe on its own.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from kltui.reference.arch import Arch
from kltui.reference.cache import RadixCache
from kltui.reference.checkpoints import RequestState, StateKeeper
from kltui.reference.faults import STALE_MIN_SHARED, Fault, fp8_like
from kltui.reference.mamba import RecurrentState
from kltui.reference.model import LlamaForCausalLM, Segment, log_softmax_rows

TOP_K_ALL = 1 << 30
STALE_MEMO = 64  # prompt-logprob answers the stale-prompt-logprobs fault remembers


@dataclass(frozen=True)
class Sampling:
    temperature: float = 1.0
    max_new_tokens: int = 128
    ignore_eos: bool = False
    top_p: float = 1.0
    top_k: int = TOP_K_ALL
    min_p: float = 0.0
    stop: tuple[str, ...] = ()
    stop_token_ids: frozenset[int] = frozenset()
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    repetition_penalty: float = 1.0
    min_new_tokens: int = 0
    sampling_seed: int | None = None
    logit_bias: tuple[tuple[int, float], ...] = ()
    skip_special_tokens: bool = True
    spaces_between_special_tokens: bool = True
    no_stop_trim: bool = False
    stream_interval: int | None = None

    @property
    def greedy(self) -> bool:
        # SGLang treats T below 1e-6 as greedy; top_k=1 at another T still reports scaled logprobs.
        return self.temperature < 1e-6

    @property
    def adjusts_logits(self) -> bool:
        return bool(
            self.frequency_penalty
            or self.presence_penalty
            or self.repetition_penalty != 1.0
            or self.logit_bias
            or self.min_new_tokens
        )


@dataclass(frozen=True)
class GenRequest:
    rid: str
    input_ids: list[int]
    sampling: Sampling
    return_logprob: bool = False
    logprob_start_len: int = -1
    top_logprobs_num: int = 0
    token_ids_logprob: tuple[int, ...] | None = None
    use_cache: bool = True  # health checks stay out of the cache

    def max_prefix_len(self) -> int:
        # SGLang's Req._compute_max_prefix_len: at least one token is computed, and prompt
        # logprobs from logprob_start_len on need their rows computed, not restored.
        cap = len(self.input_ids) - 1
        if self.return_logprob and self.logprob_start_len >= 0:
            cap = min(cap, self.logprob_start_len)
        return max(cap, 0)


TopRow = list[tuple[float, int]]


@dataclass
class PrefillInfo:
    cached_tokens: int
    input_logprobs: list[float | None] = field(default_factory=list)
    input_top: list[TopRow | None] = field(default_factory=list)
    input_ids_logprobs: list[TopRow | None] = field(default_factory=list)


@dataclass
class Progress:
    """What one step produced for one request; the HTTP side folds these into responses."""

    new_ids: list[int] = field(default_factory=list)
    new_logprobs: list[float] = field(default_factory=list)
    new_top: list[TopRow] = field(default_factory=list)
    new_ids_logprobs: list[TopRow] = field(default_factory=list)
    prefill: PrefillInfo | None = None
    finish_reason: dict | None = None


class Active:
    """A request the scheduler has admitted: its KV, its sequence so far, its RNG."""

    def __init__(self, req: GenRequest, model: LlamaForCausalLM, seed: int) -> None:
        self.req = req
        self.seq = list(req.input_ids)
        self.capacity = len(req.input_ids) + max(req.sampling.max_new_tokens, 1)
        self.kv = model.new_kv(self.capacity)
        self.decode_written = torch.zeros(self.capacity, dtype=torch.bool)
        self.prefix_len = 0
        self.window: int | None = None
        self.output_ids: list[int] = []
        self.finished = False
        self.generator = torch.Generator().manual_seed(seed)
        self.counts: dict[int, int] = {}
        self.origin = 0  # the HTTP request it came in (the scheduler's ticket)
        self.rs = new_request_state(model, len(req.input_ids))
        # retracted (the scheduler's --test-retract-interval): its KV was dropped and the next
        # prefill recomputes it for seq[:-1], emitting nothing, as SGLang re-prefills a
        # retracted request's prompt and output so far
        self.resume = False

    def prefill_ids(self) -> list[int]:
        """The ids whose KV the next prefill computes."""
        return self.seq[:-1] if self.resume else self.req.input_ids


def new_request_state(model: LlamaForCausalLM, prompt_len: int) -> RequestState:
    rec = model.recurrent
    state = None if rec is None else rec.new_state(model.lm_head.weight.dtype)
    return RequestState(state, prompt_len)


class Engine:
    def __init__(
        self,
        model: LlamaForCausalLM,
        cache: RadixCache,
        *,
        eos_ids: Sequence[int],
        deterministic: bool,
        fault: Fault,
        decode_tail,
        random_seed: int | None = None,
        chunked_prefill_size: int = 8192,
        keeper: StateKeeper | None = None,
    ) -> None:
        self.model = model
        # the stateful archs' checkpoints and window (the llama arch's when none is given)
        self.keeper = keeper or StateKeeper(Arch(page_size=cache.page_size), fault)
        self.cache = cache
        self.eos_ids = frozenset(eos_ids)
        self.deterministic = deterministic
        self.fault = fault
        self.decode_tail = decode_tail  # ids -> text, for stop strings
        self._seeds = random.Random(random_seed)
        self.chunked_prefill_size = chunked_prefill_size
        # stale-prompt-logprobs: (origin, input ids, input logprobs) since the last flush
        self._memo: list[tuple[int, list[int], list[float | None]]] = []

    def flush(self) -> None:
        """Empty the radix cache (and what the stale-prompt-logprobs fault remembers)."""
        self.cache.flush()
        self.keeper.flush()
        self._memo.clear()

    def retract(self, a: Active) -> None:
        """Drop a running request's KV; its next prefill recomputes it (SGLang's retraction)."""
        a.kv.zero_()
        a.decode_written.zero_()
        a.prefix_len = 0
        a.window = None
        a.rs = new_request_state(self.model, len(a.req.input_ids))
        a.resume = True

    def admit(self, req: GenRequest) -> Active:
        s = req.sampling.sampling_seed
        if s is None:
            # SGLang uses sampling_seed only in deterministic mode, defaulting to 42.
            s = 42 if self.deterministic else self._seeds.getrandbits(63)
        return Active(req, self.model, s)

    # ---- the two kinds of step ----

    def prefill(self, batch: Sequence[Active]) -> list[Progress]:
        for a in batch:
            self._restore(a)
        segments = self._prefill_segments(batch)
        tokens = torch.tensor([t for a in batch for t in a.prefill_ids()[a.prefix_len :]])
        hidden = self._forward(tokens, segments, len(batch))

        picks, spans = _logit_rows(batch)
        logits, logprobs = self._logits(hidden[picks], len(batch)) if picks else (None, None)

        out = []
        for a, (first, n_rows, wants_next) in zip(batch, spans, strict=True):
            if a.resume:  # KV recomputed; decoding goes on from the next step
                a.resume = False
                out.append(Progress())
                continue
            info = PrefillInfo(cached_tokens=a.prefix_len)
            if a.req.return_logprob and a.req.logprob_start_len >= 0:
                self._input_logprobs(a, info, logprobs[first : first + n_rows])
            progress = Progress(prefill=info)
            if a.req.use_cache:
                n = len(a.req.input_ids)
                self.cache.insert(a.req.input_ids, a.kv[:, :, :n], a.decode_written[:n])
                self.keeper.after_prefill(a.rs, a.req.input_ids, _snaps(segments, a))
            if wants_next:
                row = first + n_rows
                self._emit(a, logits[row], logprobs[row], progress)
            else:
                a.finished = True
                progress.finish_reason = {"type": "length", "length": 0}
                if a.req.use_cache:
                    self.keeper.on_finish(a.rs, a.req.input_ids, len(a.req.input_ids))
            out.append(progress)
        return out

    def _prefill_segments(self, batch: Sequence[Active]) -> list[Segment]:
        """Each request's new tokens as a segment of the step (two where the chunk-boundary
        fault splits one at the chunked-prefill budget)."""
        segments: list[Segment] = []
        offset = 0  # new tokens of this step before the request
        for index, a in enumerate(batch):
            n = len(a.prefill_ids()) - a.prefix_len
            a.rs.batch_index = index
            snap = self.keeper.prefill_snaps(a.rs, a.prefix_len, n + a.prefix_len, a.rs.full)
            cut = self.chunked_prefill_size - offset
            if self.fault.chunk_boundary and 0 < cut < n:
                # the rows past the budget are a second chunk that lost the first one's state
                b = a.prefix_len + cut
                segments.append(Segment(a.kv, a.prefix_len, cut, a.window, 0, a.rs.state, snap))
                segments.append(Segment(a.kv, b, n - cut, a.window, b, a.rs.state, snap))
            else:
                segments.append(Segment(a.kv, a.prefix_len, n, a.window, 0, a.rs.state, snap))
            offset += n
        return segments

    def decode(self, batch: Sequence[Active]) -> list[Progress]:
        segments = []
        corrupt = self.fault.corrupt_after()
        damaged: list[tuple[Active, torch.Tensor, int]] = []
        saves = []  # (request, position, its state before the step) where decode saves
        evict_page = self.keeper.arch.page_size if self.fault.kind == "swa-early-evict" else 0
        for a in batch:
            pos = len(a.seq) - 1
            a.decode_written[pos] = True
            if self.keeper.decode_due(a.rs, pos):
                saves.append((a, pos, a.rs.state.clone()))
            kv = a.kv
            if corrupt is not None and pos > corrupt:
                # the step reads a rounded copy; the row it writes goes back to the real cache
                kv = a.kv.clone()
                kv[:, :, corrupt:pos] = fp8_like(kv[:, :, corrupt:pos])
                damaged.append((a, kv, pos))
            segments.append(Segment(kv, pos, 1, a.window, 0, a.rs.state, evict_page=evict_page))
        tokens = torch.tensor([a.seq[-1] for a in batch])
        logits, logprobs = self._logits(self._forward(tokens, segments, len(batch)), len(batch))
        for a, kv, pos in damaged:
            a.kv[:, :, pos] = kv[:, :, pos]
        for a, pos, before in saves:
            self.keeper.after_decode(a.rs, pos, before)
        out = []
        for i, a in enumerate(batch):
            progress = Progress()
            self._emit(a, logits[i], logprobs[i], progress)
            out.append(progress)
        return out

    # ---- pieces ----

    def _rowwise(self, requests: int) -> bool:
        # batch-switch:N: above N requests the step runs the ordinary batched kernels
        return self.deterministic and not self.fault.switches_kernel(requests)

    def _forward(
        self, tokens: torch.Tensor, segments: list[Segment], requests: int
    ) -> torch.Tensor:
        if self._rowwise(requests):
            return self.model.forward_rowwise(tokens, segments)
        return self.model.forward_batched(tokens, segments)

    def _logits(self, hidden: torch.Tensor, requests: int) -> tuple[torch.Tensor, torch.Tensor]:
        rowwise = self._rowwise(requests)
        if rowwise:
            logits = self.model.logits_rowwise(hidden)
        else:
            logits = self.model.logits_batched(hidden)
        # SGLang samples and scores from float32 logits whatever the model's dtype
        logits = logits.float()
        return logits, log_softmax_rows(logits, rowwise)

    def _restore(self, a: Active) -> None:
        if not a.req.use_cache:
            return
        ids = a.prefill_ids()
        limit = len(ids) - 1 if a.resume else a.req.max_prefix_len()
        match = self.cache.match(ids, limit)
        n = self.keeper.hit_length(ids, match.length, match.swa_dead)
        a.rs.full = match.length
        if n == 0 or match.kv is None:
            return
        a.kv[:, :, :n] = match.kv[:, :, :n]
        a.decode_written[:n] = match.decode_written[:n]
        a.prefix_len = n
        self.keeper.restore(a.rs, ids, n)
        self.fault.corrupt_restored(a.kv, n)
        a.window = self.fault.attention_window(bool(match.decode_written[:n].any()))

    def _input_logprobs(self, a: Active, info: PrefillInfo, rows: torch.Tensor) -> None:
        """Entry k scores input_ids[start + k] from row start + k - 1; entry 0 has no row."""
        req = a.req
        start = req.logprob_start_len
        if start >= len(req.input_ids):
            return
        targets = req.input_ids[start + 1 :]
        picked = rows.gather(1, torch.tensor(targets, dtype=torch.long)[:, None])[:, 0]
        info.input_logprobs = [None, *picked.tolist()]
        if self.fault.stale_prompt_logprobs and start == 0:
            self._stale(a, info)
        if req.top_logprobs_num > 0:
            info.input_top = [None, *(_top(r, req.top_logprobs_num) for r in rows)]
        if req.token_ids_logprob is not None:
            info.input_ids_logprobs = [None, *(_pick(r, req.token_ids_logprob) for r in rows)]

    def _stale(self, a: Active, info: PrefillInfo) -> None:
        """stale-prompt-logprobs: entries past the prefix shared with another HTTP request's
        prompt logprobs are that request's; then this answer is remembered in turn."""
        ids = a.req.input_ids
        best, shared = None, 0
        for origin, other, lps in self._memo:
            if origin == a.origin:
                continue
            n = min(len(other), len(ids))
            eq = torch.tensor(other[:n]) != torch.tensor(ids[:n])
            common = int(torch.argmax(eq.int()).item()) if bool(eq.any()) else n
            if common > shared and len(other) > common:
                best, shared = lps, common
        if best is not None and shared >= STALE_MIN_SHARED:
            end = min(len(best), len(ids))
            info.input_logprobs[shared:end] = best[shared:end]
        self._memo.append((a.origin, list(ids), list(info.input_logprobs)))
        del self._memo[:-STALE_MEMO]

    def _emit(self, a: Active, logits: torch.Tensor, raw: torch.Tensor, progress: Progress) -> None:
        token, logprobs = self._sample(a, logits, raw)
        a.output_ids.append(token)
        a.seq.append(token)
        a.counts[token] = a.counts.get(token, 0) + 1
        req = a.req
        progress.new_ids.append(token)
        if req.return_logprob:
            progress.new_logprobs.append(logprobs[token].item())
            if req.top_logprobs_num > 0:
                progress.new_top.append(_top(logprobs, req.top_logprobs_num))
            if req.token_ids_logprob is not None:
                progress.new_ids_logprobs.append(_pick(logprobs, req.token_ids_logprob))
        reason = self._finish_reason(a, token)
        if reason is not None:
            a.finished = True
            progress.finish_reason = reason
            if req.use_cache:
                # KV exists for everything but the last sampled token (SGLang's
                # cache_finished_req), so a follow-up turn can hit the decode-written region.
                n = len(a.seq) - 1
                kv, dead = self.keeper.finish_kv(
                    a.rs, a.kv[:, :, :n], len(req.input_ids), n, self.model.layer_windows
                )
                self.cache.insert(a.seq[:n], kv, a.decode_written[:n], dead)
                self.keeper.on_finish(a.rs, a.seq, n)

    def _sample(
        self, a: Active, logits: torch.Tensor, raw: torch.Tensor
    ) -> tuple[int, torch.Tensor]:
        """Next token and the logprob row reported for it.

        Greedy and T=1 report the unscaled log_softmax (the very row prompt logprobs use); any
        other temperature reports log_softmax(logits / T), as SGLang's sampler does.
        """
        s = a.req.sampling
        adjusted = self._adjust(a, logits) if s.adjusts_logits else None
        base = logits if adjusted is None else adjusted
        if s.greedy:
            logprobs = raw if adjusted is None else _row_log_softmax(adjusted)
            return int(torch.argmax(base).item()), logprobs
        scaled = base if s.temperature == 1.0 else base / s.temperature
        logprobs = raw if (adjusted is None and s.temperature == 1.0) else _row_log_softmax(scaled)
        probs = torch.softmax(scaled, dim=-1)
        if s.top_k < probs.numel():
            kth = torch.topk(probs, s.top_k).values[-1]
            probs = torch.where(probs < kth, torch.zeros_like(probs), probs)
        if s.top_p < 1.0:
            sorted_p, order = torch.sort(probs, descending=True)
            drop = (torch.cumsum(sorted_p, 0) - sorted_p) > s.top_p
            probs = probs.scatter(0, order[drop], 0.0)
        if s.min_p > 0.0:
            probs = torch.where(probs < s.min_p * probs.max(), torch.zeros_like(probs), probs)
        token = torch.multinomial(probs / probs.sum(), 1, generator=a.generator)
        return int(token.item()), logprobs

    def _adjust(self, a: Active, logits: torch.Tensor) -> torch.Tensor:
        s = a.req.sampling
        out = logits.clone()
        if a.counts:
            ids = torch.tensor(list(a.counts))
            counts = torch.tensor(list(a.counts.values()), dtype=out.dtype)
            seen = out[ids]
            if s.repetition_penalty != 1.0:
                seen = torch.where(
                    seen > 0, seen / s.repetition_penalty, seen * s.repetition_penalty
                )
            seen = seen - s.frequency_penalty * counts - s.presence_penalty
            out[ids] = seen
        for token, bias in s.logit_bias:
            out[token] += bias
        if len(a.output_ids) < s.min_new_tokens:
            blocked = self.eos_ids | s.stop_token_ids
            if blocked:
                out[list(blocked)] = float("-inf")
        return out

    def _finish_reason(self, a: Active, token: int) -> dict | None:
        # Same order as SGLang's Req.check_finished.
        s = a.req.sampling
        if len(a.output_ids) >= s.max_new_tokens:
            return {"type": "length", "length": s.max_new_tokens}
        if len(a.output_ids) < s.min_new_tokens:
            return None
        if not s.ignore_eos and (token in self.eos_ids or token in s.stop_token_ids):
            return {"type": "stop", "matched": token}
        if s.stop:
            longest = max(len(x) for x in s.stop)
            tail = self.decode_tail(a.output_ids[-(longest + 1) :])
            for stop in s.stop:
                if stop in tail:
                    return {"type": "stop", "matched": stop}
        return None


def _snaps(segments: list[Segment], a: Active) -> dict[int, RecurrentState]:
    """The states one request's prefill segments saved (two with the chunk-boundary fault)."""
    if a.rs.state is None:
        return {}
    return {k: v for s in segments if s.state is a.rs.state for k, v in s.snaps.items()}


def _row_log_softmax(row: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(row[None, :], dim=-1)[0]


def _top(row: torch.Tensor, k: int) -> TopRow:
    values, ids = torch.topk(row, min(k, row.numel()))
    return list(zip(values.tolist(), ids.tolist(), strict=True))


def _pick(row: torch.Tensor, ids: Sequence[int]) -> TopRow:
    return [(row[i].item(), i) for i in ids]


def _logit_rows(batch: Sequence[Active]) -> tuple[list[int], list[tuple[int, int, bool]]]:
    """The hidden rows of a prefill step that need logits (the input positions whose logprobs
    were asked, then the last one where a token is to be decoded), and per request its first
    row among them, its number of input rows and whether it decodes next."""
    picks: list[int] = []  # hidden rows that need logits
    spans: list[tuple[int, int, bool]] = []  # per request: first pick, input rows, has next
    row0 = 0
    for a in batch:
        n_in = len(a.prefill_ids())
        lsl = a.req.logprob_start_len if a.req.return_logprob and not a.resume else -1
        in_positions = range(lsl, n_in - 1) if lsl >= 0 else range(0)
        wants_next = a.req.sampling.max_new_tokens > 0 and not a.resume
        first = len(picks)
        picks += [row0 + p - a.prefix_len for p in in_positions]
        if wants_next:
            picks.append(row0 + n_in - 1 - a.prefix_len)
        spans.append((first, len(in_positions), wants_next))
        row0 += n_in - a.prefix_len
    return picks, spans
