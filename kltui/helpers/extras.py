"""Drill-down extras after the gate: top-k alternatives and token text from a request of their own.

The gate's requests are exactly SGLang's (no `top_logprobs_num`, no `return_text_in_logprobs`):
asking for top-k and text at every prompt position of every replay tripled the cost of a run on
a GPU server. The drill-down needs them only where someone looks, so after the helpers finish
one bounded prefill-only request per server fetches them for the worst few samples of each
helper, only around their first divergence and their largest k3. Its logprobs are shown as what they are (another
request: another batch, and a radix-cache prefix up to the window) and never scored.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np

from kltui.engines.errors import EngineError
from kltui.engines.idcheck import check_ids
from kltui.engines.sglang import SGLangClient
from kltui.engines.sglang_request import LogprobAsk
from kltui.errors import UsageError
from kltui.helpers.phases import Run
from kltui.metrics.k3 import SampleMetrics
from kltui.metrics.protocol import above_zero, topk_over, topk_sums
from kltui.session.events import Event, ExtrasFetched, Problem

PAD = 8  # generated positions of context on either side of a point of interest
MAX_WINDOW = 64  # two points closer than this share one window
OPENED_MAX = 512  # generated positions one request for a sample opened in the drill-down covers


def windows(m: SampleMetrics) -> list[tuple[int, int]]:
    """[lo, hi) generated positions around the first divergence and the largest k3."""
    n = m.n_tokens
    points = {m.first_divergence, m.argmax_k3 if m.max_k3 != 0 else None}
    spans: list[tuple[int, int]] = []
    for p in sorted(p for p in points if p is not None and 0 <= p < n):
        lo, hi = max(0, p - PAD), min(n, p + PAD + 1)
        if spans and hi - spans[-1][0] <= MAX_WINDOW:
            spans[-1] = (spans[-1][0], max(hi, spans[-1][1]))
        else:
            spans.append((lo, hi))
    return spans


def worst_samples(run: Run, n: int) -> list[int]:
    """The n samples with the largest mean k3 that differ at all (non-finite ones first)."""
    scored = [s for s in run.book.samples.values() if s.metrics.first_divergence is not None]

    def key(s):
        mean = s.metrics.mean_k3
        return (0, 0.0) if not np.isfinite(mean) else (1, -mean)

    return [s.sample for s in sorted(scored, key=key)[:n]]


def plan(run: Run, samples: list[int]) -> list[tuple[Run, int, int, int]]:
    """(run, sample, lo, hi) for every window to fetch."""
    out: list[tuple[Run, int, int, int]] = []
    for sample in samples:
        sc = run.book.samples.get(sample)
        if sc is None or sample not in run.scored_inputs:
            continue
        out.extend((run, sample, lo, hi) for lo, hi in windows(sc.metrics))
    return out


async def fetch_extras(
    items: list[tuple[Run, int, int, int]], top_k: int, reason: str, client=None
) -> AsyncIterator[Event]:
    """One batched prefill-only request for the windows in `items` (all on one server); an
    ExtrasFetched each.

    Window [lo, hi) of a sample sends its replayed ids up to prompt + hi with
    logprob_start_len = prompt + lo - 1: SGLang's first input entry has no logprob, so the
    entries after it score exactly positions lo..hi-1, and nothing past the window is computed.
    A failure here is a warning: the gate's result is already decided and stays.
    `client`: another client of the same server (the run's own is closed once it ended).
    """
    if not items or top_k <= 0:
        return
    ctx = items[0][0].ctx
    client = client or ctx.client
    batch, starts = [], []
    for run, sample, lo, hi in items:
        sc = run.book.samples[sample]
        batch.append(run.scored_inputs[sample][: sc.prompt_len + hi])
        starts.append(sc.prompt_len + lo - 1)
    try:
        results = await client.generate(
            batch,
            ctx.sampling(0),
            LogprobAsk(
                logprob_start_len=starts, top_logprobs_num=top_k, return_text_in_logprobs=True
            ),
        )
    except EngineError as e:
        for run in dict.fromkeys(it[0] for it in items):
            yield _warning(run, f"{e.message}; the drill-down shows no top-k for these samples")
        return
    for (run, sample, lo, hi), res in zip(items, results, strict=True):
        sc = run.book.samples[sample]
        ids, lps = res.input_logprob_ids[1:], res.input_logprobs[1:]
        want = sc.token_ids[lo:hi]
        # a per-id server quirk (SGLang reports the last vocabulary id as 0) is not a shift
        if ids.size != want.size or (
            not np.array_equal(ids, want) and check_ids(ids, want).misaligned is not None
        ):
            yield _warning(
                run,
                f"sample {sample}: the extras request scored other tokens than positions "
                f"{lo}..{hi - 1} (got {ids.size} entries); its top-k is not shown",
            )
            continue
        top = [
            [[int(t), float(lp)] for t, lp in pos] if pos else []
            for pos in (res.input_top or [])[1 : 1 + want.size]
        ]
        if (fault := _impossible(top, lps, lo)) is not None:
            yield _warning(run, f"protocol fault: sample {sample}: {fault}; its top-k is not shown")
            continue
        texts = res.input_texts[1:] if res.input_texts else None
        alt_texts = {str(k): v for k, v in (res.input_top_texts or {}).items()}
        if texts is None and ctx.tokenizer is not None:
            # a server without a tokenizer sends no text: the local tokenizer's, when given
            try:
                texts, alt_texts = _local_texts(ctx.tokenizer, want, top)
            except UsageError:
                pass  # a failed local load was reported where the separator needed it
        yield ExtrasFetched(
            run.helper,
            ctx.server,
            sample,
            lo,
            want,
            lps,
            top,
            texts=texts,
            alt_texts=alt_texts,
            reason=reason,
        )


def _impossible(top: list, lps: np.ndarray, lo: int) -> str | None:
    """What in an extras answer no correct server sends (top-k probabilities that sum above 1,
    logprobs above 0), at generated positions from `lo`; None when nothing."""
    found = []
    sums = topk_sums(top)
    over = topk_over(top)
    if over.size:
        found.append(
            f"top-k probabilities sum above 1 (impossible) at position(s) "
            f"{', '.join(str(lo + int(p)) for p in over[:6])}{' ...' if over.size > 6 else ''} "
            f"(largest sum {float(sums[over].max()):.4g})"
        )
    pos = np.flatnonzero(above_zero(lps))
    if pos.size:
        found.append(
            f"logprobs above 0 (impossible) at position(s) "
            f"{', '.join(str(lo + int(p)) for p in pos[:6])}{' ...' if pos.size > 6 else ''}"
        )
    return "; ".join(found) or None


def _local_texts(tokenizer, want: np.ndarray, top: list) -> tuple[list, dict[str, str]]:
    alts = sorted({t for pos in top for t, _ in pos})
    return tokenizer.token_texts(want), dict(
        zip(map(str, alts), tokenizer.token_texts(alts), strict=True)
    )


async def after_gate(runs: list[Run], n_samples: int, top_k: int) -> AsyncIterator[Event]:
    """The bounded follow-up pass: the n worst samples of each finished helper of one server,
    in one request."""
    if n_samples <= 0 or top_k <= 0:
        return
    items = [it for run in runs for it in plan(run, worst_samples(run, n_samples))]
    async for ev in fetch_extras(items, top_k, "worst"):
        yield ev


def _warning(run: Run, message: str) -> Problem:
    return Problem(
        run.ctx.server,
        f"[{run.helper}/extras] {message}",
        fatal=False,
        helper=run.helper,
        phase="extras",
    )


def opened_window(n_tokens: int, around: int | None) -> tuple[int, int]:
    """[lo, hi) generated positions fetched for a sample opened in the drill-down: all of it
    up to OPENED_MAX positions, else OPENED_MAX of them centred on `around`."""
    if n_tokens <= OPENED_MAX:
        return 0, n_tokens
    lo = max(0, min((around or 0) - OPENED_MAX // 2, n_tokens - OPENED_MAX))
    return lo, lo + OPENED_MAX


async def for_opened(
    run: Run, sample: int, around: int | None, top_k: int, api_key: str | None, timeout: float
) -> list[Event]:
    """Top-k and token text of one sample opened in the drill-down once its run has ended:
    one bounded prefill-only request on a client of its own (the run's is closed), never
    during the gate. An ExtrasFetched "opened", a warning Problem, or nothing to fetch."""
    sc = run.book.samples.get(sample)
    if sc is None or sample not in run.scored_inputs or sc.metrics.n_tokens == 0:
        return []
    lo, hi = opened_window(sc.metrics.n_tokens, around)
    client = SGLangClient(run.ctx.server, api_key, timeout=timeout)
    try:
        return [ev async for ev in fetch_extras([(run, sample, lo, hi)], top_k, "opened", client)]
    finally:
        await client.aclose()
