"""The phases every helper shares (flush, decode, replay and score) and the per-helper
bookkeeping (`Run`: phase tagging, the ScoreBook, the summary); `@helper` turns a helper's
generator into the start the registry names."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable

import numpy as np

from kltui.engines.errors import EngineError, ServerRestarted
from kltui.engines.idcheck import unexplained
from kltui.engines.sglang import PROCESS_IDENTITY
from kltui.engines.sglang_parse import Delta, GenResult
from kltui.engines.sglang_request import NO_LOGPROBS, LogprobAsk
from kltui.helpers.context import (
    COMPARABLE_TEMPERATURES,
    HelperContext,
    PhaseError,
    describe_logprob,
)
from kltui.helpers.score_problems import prompt_ids, reported_ids, stray_output
from kltui.metrics.k3 import ScoreBook, invalidate
from kltui.metrics.protocol import UNVERIFIED, not_a_number, unverified
from kltui.metrics.summary import SummaryStatus
from kltui.registry import HELPERS
from kltui.session.events import (
    Event,
    HelperFinished,
    HelperStarted,
    PhaseChanged,
    Problem,
    SampleScored,
    SampleSkipped,
    TokensDecoded,
)
from kltui.session.store import add_scored


def helper(name: str) -> Callable:
    """Makes `fn(ctx, run)` a helper's start (`registry.Helper.start`): on a fatal fault its
    PhaseError leaves with `.finished`, what was measured until then (status error, or invalid
    when the server restarted under it)."""

    def wrap(fn: Callable[..., AsyncIterator[Event]]) -> Callable[..., AsyncIterator[Event]]:
        @functools.wraps(fn)
        async def start(ctx: HelperContext, run: Run | None = None) -> AsyncIterator[Event]:
            run = run or Run(ctx, name)
            try:
                async for ev in fn(ctx, run):
                    if isinstance(ev, HelperFinished) and ev.helper == run.helper:
                        # each protocol finding is also a line of its own, before the result
                        for p in run.protocol_problems(ev):
                            yield p
                    yield ev
            except PhaseError as e:
                if e.finished is None:
                    e.finished = run.partial(str(e))
                    if isinstance(e.err, ServerRestarted):
                        e.finished.summary["status"] = SummaryStatus.INVALID
                raise

        return start

    return wrap


class Run:
    """Per-helper bookkeeping shared by all helpers: phase tagging, scoring, the summary."""

    def __init__(self, ctx: HelperContext, helper: str) -> None:
        self.ctx, self.helper = ctx, helper
        self.phase = "starting"
        self.book = ScoreBook(ctx.tail_threshold, sides=_sides(helper))
        self.skipped = 0
        # scored-decode samples whose answer nothing tied to its prompt (no echoed rid, no
        # prompt_tokens): an answer swapped between prompts cannot be told from a divergence
        self.unverified: set[int] = set()
        self.extra: dict = {}
        # samples of the helper when they are not its prompts (multiturn: one per turn)
        self.n_samples: int | None = None
        # sample -> the ids side A replayed (prompt + generated), for the extras pass
        self.scored_inputs: dict[int, np.ndarray] = {}
        # the prompt-id quirk is said once per helper: multiturn replays every turn on its own,
        # and real SGLang's last-vocab-id quirk made it 30 warnings of one fact on a real run
        self.said_prompt_ids = False

    def started(self, settings: dict) -> HelperStarted:
        """The helper's first event: its samples, thresholds (sent once, here) and settings."""
        src = self.ctx.threshold_source
        return HelperStarted(
            self.helper,
            self.ctx.server,
            self.samples(),
            self.ctx.threshold,
            self.ctx.tail_threshold,
            settings,
            threshold_source=src.to_dict() if src is not None else None,
        )

    def samples(self) -> int:
        """How many samples the helper scores (its prompts unless it says otherwise)."""
        return len(self.ctx.prompts) if self.n_samples is None else self.n_samples

    def enter(self, phase: str) -> PhaseChanged:
        """Enter a phase; the event that says so."""
        self.phase = phase
        return PhaseChanged(self.helper, self.ctx.server, phase)

    def error(self, err: EngineError) -> PhaseError:
        """A PhaseError for an engine error in the current phase."""
        return PhaseError(err, self.helper, self.phase)

    def both_sides_non_finite(self, scored: list[SampleScored]) -> Problem | None:
        """One warning for positions whose logprobs are not numbers on both sides.

        NaN/inf cannot be scored (k3 is undefined), so the helper fails rather than averaging
        them in silently; the values stay in the recording for inspection. SGLang's JSON
        encoder writes NaN and inf as null, which kltui reads as NaN. A value that is not a
        number on one side only is a protocol finding instead (`metrics.protocol`).
        """
        where = []
        for ev in scored:
            a, b = np.asarray(ev.lp_a), np.asarray(ev.lp_b)
            for pos in np.flatnonzero(not_a_number(a) & not_a_number(b))[:2]:
                where.append(
                    f"sample {ev.sample} position {int(pos)} is "
                    f"{describe_logprob(float(a[pos]))} (prefill) and "
                    f"{describe_logprob(float(b[pos]))} (decode)"
                )
        if not where:
            return None
        self.extra["status"] = SummaryStatus.FAIL
        self.extra["reason"] = "logprobs that are not finite numbers on both sides"
        return Problem(
            self.ctx.server,
            f"[{self.helper}/score] logprobs that are not finite numbers on both sides: "
            f"{'; '.join(where[:4])}{' ...' if len(where) > 4 else ''}; k3 is undefined there, "
            "so the helper fails",
            fatal=False,
            helper=self.helper,
            phase="score",
        )

    def temperature_warning(self) -> Problem | None:
        """A Problem when the temperature makes logprobs incomparable, else None."""
        if self.ctx.temperature in COMPARABLE_TEMPERATURES:
            return None
        return Problem(
            self.ctx.server,
            f"temperature {self.ctx.temperature:g} is not 0 or 1: SGLang scales output logprobs "
            "by 1/T but never input logprobs, so k3 measures the temperature, not the engine",
            fatal=False,
            helper=self.helper,
        )

    async def begin(self, settings: dict) -> AsyncIterator[Event]:
        """The helper's opening events: HelperStarted, then the temperature warning if any."""
        yield self.started(settings)
        if (warn := self.temperature_warning()) is not None:
            yield warn

    async def decode(
        self,
        inputs: list[np.ndarray],
        items: list[tuple[int, np.ndarray, GenResult]],
        missed: Callable[[int, GenResult], str | None] | None = None,
    ) -> AsyncIterator[Event]:
        """The scored decode of every sample: (sample, input, result) into `items` for the
        replay, or, where `missed` gives a reason, a SampleSkipped saying it."""
        samples = list(range(len(inputs)))
        out: list[GenResult] = []
        async for ev in self.generate(
            "decode", inputs, samples, out, max_new_tokens=self.ctx.max_new_tokens
        ):
            yield ev
        for s, r in zip(samples, out, strict=True):
            why = missed(s, r) if missed is not None else None
            if why is None:
                items.append((s, inputs[s], r))
            else:
                self.skipped += 1
                yield SampleSkipped(
                    self.helper, self.ctx.server, s, why, r.cached_tokens, int(inputs[s].size)
                )

    async def flush(self) -> AsyncIterator[Event]:
        """Flush the server's cache, checking it is still the same process."""
        yield self.enter("flush")
        try:
            await self.ctx.client.flush_cache(self.ctx.flush_timeout)
            await self.check_identity()
        except EngineError as e:
            raise self.error(e) from None

    async def check_identity(self) -> None:
        """Phases are separated by flushes; a restart there would silently mix two servers."""
        if not self.ctx.server_info:
            return
        now = await self.ctx.client.server_info()
        if self.ctx.identity(now) != self.ctx.identity():
            changed = [
                k
                for k, a, b in zip(
                    PROCESS_IDENTITY, self.ctx.identity(), self.ctx.identity(now), strict=True
                )
                if a != b
            ]
            raise ServerRestarted(
                self.ctx.server,
                f"server restarted or changed during the run ({', '.join(changed)} changed); "
                "results of this helper are invalid",
                "server-restarted",
            )

    async def generate(
        self,
        phase: str,
        batch: list[np.ndarray],
        samples: list[int],
        out: list[GenResult],
        *,
        max_new_tokens: int,
        logprobs: bool = True,
    ) -> AsyncIterator[Event]:
        """A decode-side batch; streams TokensDecoded as tokens arrive; results into `out`."""
        yield self.enter(phase)
        ctx = self.ctx
        ask = LogprobAsk(logprob_start_len=-1) if logprobs else NO_LOGPROBS
        # Only the scored decode shows live in the heatmap; warm-up and turn 1 are not scored,
        # so they are never streamed: a stream costs the server and the client per chunk.
        live = phase == "decode"
        streamed = ctx.stream and live and max_new_tokens > 0
        sp = ctx.sampling(max_new_tokens, streamed=streamed)
        try:
            if streamed:
                stream = ctx.client.generate_stream(batch, sp, ask, incremental=ctx.incremental)
                async for item in stream:
                    if isinstance(item, Delta):
                        if live:
                            yield TokensDecoded(
                                self.helper,
                                ctx.server,
                                samples[item.index],
                                item.start,
                                item.token_ids,
                                item.logprobs,
                            )
                    else:
                        out.extend(item)
            else:
                results = await ctx.client.generate(batch, sp, ask)
                for r in results if live else ():
                    yield TokensDecoded(
                        self.helper,
                        ctx.server,
                        samples[r.index],
                        0,
                        r.output_ids,
                        r.output_logprobs,
                    )
                out.extend(results)
        except EngineError as e:
            raise self.error(e) from None
        if live:  # the scored answers: a prompt_tokens count or the echoed rid ties each
            self.unverified.update(samples[r.index] for r in out if not r.prompt_verified)
        if logprobs:
            self._check_lengths(samples, out)

    def _check_lengths(self, samples: list[int], out: list[GenResult]) -> None:
        """Every answer carries a logprob per output token, or the run is an error."""
        for r in out:
            if r.output_logprobs.size != r.output_ids.size:
                raise self.error(
                    EngineError(
                        self.ctx.server,
                        f"sample {samples[r.index]}: {r.output_ids.size} output tokens but "
                        f"{r.output_logprobs.size} output_token_logprobs",
                        "length-mismatch",
                    )
                )

    async def replay_and_score(
        self, items: list[tuple[int, np.ndarray, GenResult]]
    ) -> AsyncIterator[Event]:
        """Side A: flush, prefill prompt+output with logprob_start_len=0, align, score."""
        async for ev in self.flush():
            yield ev
        yield self.enter("prefill")
        items = [it for it in items if it[2].output_ids.size]
        batch = [np.concatenate([p, r.output_ids]) for _, p, r in items]
        if not batch:
            return
        results = await self._replay(batch)
        yield self.enter("score")
        if (
            warn := stray_output(self.ctx.server, self.helper, [it[0] for it in items], results)
        ) is not None:
            yield warn
        self.check_compared_ids(items, results)
        prompt_quirks: list = []
        compared: list = []
        scored_now: list[SampleScored] = []
        for (sample, prompt, gen), full, res in zip(items, batch, results, strict=True):
            lp_a, mismatch, in_prompt = self._aligned(sample, gen, full, res)
            if in_prompt.size:
                prompt_quirks.append((sample, in_prompt, res.input_logprob_ids, full))
            if mismatch:
                compared.append((sample, [(k, int(gen.output_ids[k]), r) for k, r in mismatch]))
            scored = SampleScored(
                self.helper,
                self.ctx.server,
                sample,
                gen.output_ids,
                lp_a,
                gen.output_logprobs,
                gen.cached_tokens,
                int(prompt.size),
                id_mismatch=mismatch,
            )
            add_scored(self.book, scored)
            self.scored_inputs[sample] = full
            scored_now.append(scored)
            yield scored
        if (p := self.both_sides_non_finite(scored_now)) is not None:
            yield p
        if prompt_quirks and not self.said_prompt_ids:
            self.said_prompt_ids = True
            yield prompt_ids(self.ctx.server, self.helper, prompt_quirks)
        if compared:
            yield reported_ids(self.ctx.server, self.helper, compared)

    async def _replay(self, batch: list[np.ndarray]) -> list[GenResult]:
        """Exactly SGLang's replay: no top-k, no token text (the drill-down's extras come later
        from a request of their own, helpers/extras.py, never from the gate's)."""
        ctx = self.ctx
        try:
            results = await ctx.client.generate(
                batch, ctx.sampling(0), LogprobAsk(logprob_start_len=0)
            )
            # the flush checked the server before the replay; this catches a restart during it
            await self.check_identity()
        except EngineError as e:
            raise self.error(e) from None
        return results

    def _aligned(
        self, sample: int, gen: GenResult, full: np.ndarray, res: GenResult
    ) -> tuple[np.ndarray, list | None, np.ndarray]:
        """Side A's logprobs of the generated tokens, the compared positions where the server
        reported another id than the one scored (the documented quirk: scored anyway, as
        SGLang's helpers do, each reported with the id the server claimed), and the quirk's
        prompt positions; any other disagreement is an error naming the server."""
        n = gen.output_ids.size
        if res.input_logprobs.size != full.size:
            raise self.error(
                EngineError(
                    self.ctx.server,
                    f"sample {sample}: replay returned {res.input_logprobs.size} "
                    f"input_token_logprobs for {full.size} input tokens",
                    "length-mismatch",
                )
            )
        lp_a, ids_a = res.input_logprobs[-n:], res.input_logprob_ids[-n:]
        quirk = res.id_mismatch if res.id_mismatch is not None else np.zeros(0, np.int64)
        tail = np.flatnonzero(ids_a != gen.output_ids)
        allowed = quirk[quirk >= full.size - n] - (full.size - n)
        mismatch = None
        if tail.size and np.array_equal(tail, allowed):
            mismatch = [[int(k), int(ids_a[k])] for k in tail]
            tail = tail[:0]
        if tail.size:
            k = int(tail[0])
            raise self.error(
                EngineError(
                    self.ctx.server,
                    f"sample {sample}: side A token id {int(ids_a[k])} != side B generated id "
                    f"{int(gen.output_ids[k])} at position {k} (misaligned logprobs)",
                    "token-mismatch",
                )
            )
        return lp_a, mismatch, quirk[quirk < full.size - n]

    def check_compared_ids(self, items: list, results: list) -> None:
        """A reported id at a compared position that is not the documented quirk makes the
        sample misaligned, and the run an error naming the server."""
        # a row of another length fails its own check in the scoring loop
        kept = [
            (it, res)
            for it, res in zip(items, results, strict=True)
            if res.input_logprob_ids.size == it[1].size + it[2].output_ids.size
        ]
        rows = [
            (res.input_logprob_ids, np.concatenate([p, g.output_ids]), p.size)
            for (_, p, g), res in kept
        ]
        found = unexplained(rows)
        if found is None:
            return
        i, k = found
        sample, _, gen = kept[i][0]
        reported = int(rows[i][0][rows[i][2] + k])
        raise self.error(
            EngineError(
                self.ctx.server,
                f"sample {sample}: side A token id {reported} != side B generated id "
                f"{int(gen.output_ids[k])} at position {k} (misaligned logprobs: not the "
                "documented quirk, the last vocabulary id reported as 0 or an id mapping seen "
                "at prompt positions too)",
                "token-mismatch",
            )
        )

    def finished(self, **extra) -> HelperFinished:
        """The HelperFinished event with the summary of everything scored."""
        summary = self.book.summary(
            n_samples=self.samples(), n_skipped=self.skipped, threshold=self.ctx.threshold
        )
        # the thresholds went down once, in HelperStarted (`started`); the store puts them back
        del summary["threshold"], summary["tail_threshold"]
        summary.update(self.extra)
        summary.update(extra)
        found = [dict(f) for f in summary.get("protocol") or ()]
        if self.unverified:
            found.append(
                unverified(
                    sorted(self.unverified),
                    "the server reports neither prompt_tokens nor the request id (rid) it was "
                    "sent as meta_info.id",
                )
            )
        for f in found:  # one line that names the helper and the server
            f["message"] = f"{self.helper} on {self.ctx.server}: {f['message']}"
        summary["protocol"] = found
        if found and summary.get("status") != "error":
            invalidate(summary, found)
        if summary.get("status") is None:
            summary["status"] = SummaryStatus.PASS if summary["passed"] else SummaryStatus.FAIL
        summary["passed"] = summary["status"] == "pass"
        return HelperFinished(self.helper, self.ctx.server, summary)

    def protocol_problems(self, fin: HelperFinished) -> list[Problem]:
        """A warning per protocol finding of `fin` (the data is its summary's `protocol`)."""
        prefix = f"{self.helper} on {self.ctx.server}: "
        return [
            Problem(
                self.ctx.server,
                f"[{self.helper}/{phase}] protocol fault: {f['message'].removeprefix(prefix)}",
                fatal=False,
                helper=self.helper,
                phase=phase,
            )
            for f in fin.summary.get("protocol") or ()
            for phase in ["decode" if f.get("kind") == UNVERIFIED else "score"]
        ]

    def partial(self, message: str) -> HelperFinished:
        """What was measured before a fatal fault, marked as an error (never averaged in)."""
        return self.finished(status=SummaryStatus.ERROR, error=message)


def _sides(helper: str) -> tuple[str, str]:
    """What side A and side B are called in the helper's protocol findings."""
    spec = HELPERS.get(helper)
    if spec is None or not spec.same_engine:
        return ("SGLang", spec.side_b if spec else "side B")
    return ("prefill", spec.side_b)
