"""`kltui import FILE --server URL`: the file's shown samples re-scored on a live SGLang server,
as more helpers of the import's run (one event stream):

- `server_vs_rollout`: side A a teacher-forced prefill of prompt + response on the server now,
  side B the rollout's recorded logprobs: does today's server reproduce what the rollout saw?
- `trainer_vs_server`: side A the trainer, side B the same prefill: is the trainer's number the
  server's prefill number (then the mismatch is in the rollout's decode), or not (kernels or
  numerics differ between the engines)?
- `match`, the real helper, on the file's prompts with as many new tokens as the responses:
  the server's own decode against its own prefill (condition 1 on today's server).

So each shown sample has three numbers per token: the trainer's, the rollout's as recorded,
and the server's now.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence

import numpy as np
import orjson

from kltui.engines.errors import EngineError
from kltui.engines.sglang import SGLangClient
from kltui.engines.sglang_request import LogprobAsk
from kltui.importer.schema import Record
from kltui.metrics.k3 import ScoreBook
from kltui.run.config import RunConfig
from kltui.run.runner import run_session
from kltui.session.events import (
    Event,
    HelperFinished,
    HelperStarted,
    PhaseChanged,
    Problem,
    RunFinished,
    RunStarted,
    SampleScored,
    SampleSkipped,
)

SERVER_VS_ROLLOUT = "server_vs_rollout"
TRAINER_VS_SERVER = "trainer_vs_server"
BATCH = 16  # sequences per prefill request
MAX_MATCH_TOKENS = 512  # the match helper's new tokens at most (a decode per prompt)

SIDES = {
    SERVER_VS_ROLLOUT: ("server prefill now", "rollout as recorded"),
    TRAINER_VS_SERVER: ("trainer", "server prefill now"),
}


def _scored(helper: str, server: str, rec: Record, a: np.ndarray, b: np.ndarray) -> SampleScored:
    m = rec.mask
    return SampleScored(
        helper,
        server,
        rec.index - 1,
        np.asarray(rec.response_ids[m], dtype=np.int64),
        np.asarray(a[m], dtype=np.float64),
        np.asarray(b[m], dtype=np.float64),
        0,
        int(rec.prompt_ids.size),
    )


async def _prefill(client: SGLangClient, recs: Sequence[Record]) -> list[np.ndarray | str]:
    """The server's logprobs of each record's response tokens after its prompt (teacher
    forcing), or why they could not be had."""
    batch = [np.concatenate([r.prompt_ids, r.response_ids]).astype(np.int64) for r in recs]
    results = await client.generate(
        batch,
        {"max_new_tokens": 0, "temperature": 0.0},
        LogprobAsk(logprob_start_len=0),
    )
    out: list[np.ndarray | str] = []
    for rec, res in zip(recs, results, strict=True):
        lp = np.asarray(res.input_logprobs, dtype=np.float64)[-rec.n :]
        ids = np.asarray(res.input_logprob_ids)[-rec.n :]
        if lp.size != rec.n or not np.array_equal(ids, rec.response_ids):
            out.append("the server's prefill did not score the response tokens (ids differ)")
        else:
            out.append(lp)
    return out


def _prompt_file(recs: Sequence[Record]) -> str:
    fd, path = tempfile.mkstemp(prefix="kltui-import-", suffix=".jsonl")
    with os.fdopen(fd, "wb") as f:
        for r in recs:
            f.write(orjson.dumps({"input_ids": r.prompt_ids.tolist()}) + b"\n")
    return path


async def rescore_events(
    recs: Sequence[Record],
    server: str,
    api_key: str | None,
    *,
    threshold: float,
    tail_threshold: float,
) -> AsyncIterator[Event]:
    """The re-scoring helpers' events (no RunStarted/RunFinished: they join the import's run).
    A server that cannot be reached is one fatal Problem naming it."""
    client = SGLangClient(server, api_key)
    try:
        try:
            await client.identify()
        except EngineError as e:
            yield Problem(server, f"--server {server}: {e}", True)
            return
        books = {h: ScoreBook(tail_threshold, SIDES[h]) for h in SIDES}
        for h, (a, b) in SIDES.items():
            yield HelperStarted(
                h,
                server,
                len(recs),
                threshold,
                tail_threshold,
                settings={"source": "import --server", "side_a": a, "side_b": b},
            )
            yield PhaseChanged(h, server, "prefill")
        skipped = 0
        for start in range(0, len(recs), BATCH):
            part = recs[start : start + BATCH]
            try:
                answers = await _prefill(client, part)
            except EngineError as e:
                yield Problem(server, f"--server {server}: prefill: {e}", True, SERVER_VS_ROLLOUT)
                return
            for rec, got in zip(part, answers, strict=True):
                if isinstance(got, str):
                    skipped += 1
                for ev in _one_record(server, rec, got, books):
                    yield ev
        for h, book in books.items():
            yield HelperFinished(
                h, server, book.summary(n_samples=len(recs), n_skipped=skipped, threshold=threshold)
            )
    finally:
        await client.aclose()
    async for event in match_events(recs, server, api_key):
        yield event


def _one_record(
    server: str, rec: Record, got: np.ndarray | str, books: dict[str, ScoreBook]
) -> Iterator[Event]:
    """One record's events: skipped by both helpers (`got`: why), or scored by each against
    the server's logprobs (`got`) and kept in its book."""
    if isinstance(got, str):
        for h in SIDES:
            yield SampleSkipped(h, server, rec.index - 1, got)
        return
    pairs: list[tuple[str, np.ndarray, np.ndarray]] = [
        (SERVER_VS_ROLLOUT, got, rec.rollout),
        (TRAINER_VS_SERVER, rec.trainer, got),
    ]
    for h, side_a, side_b in pairs:
        scored = _scored(h, server, rec, side_a, side_b)
        books[h].add(
            scored.sample, scored.token_ids, scored.lp_a, scored.lp_b, 0, scored.prompt_len
        )
        yield scored


async def match_events(
    recs: Sequence[Record], server: str, api_key: str | None
) -> AsyncIterator[Event]:
    """The match helper on the records' prompts, run by the runner as any run is; its helper
    events only (they join the import's run)."""
    usable = [r for r in recs if r.prompt_ids.size]
    if not usable:
        yield Problem(server, "match not run: the file's records have no prompt_ids", False)
        return
    path = _prompt_file(usable)
    try:
        new = int(min(MAX_MATCH_TOKENS, max(r.n for r in usable)))
        cfg = RunConfig(
            servers=[server],
            helpers=["match"],
            samples=len(usable),
            max_new_tokens=new,
            prompts=path,
            max_prompt_tokens=None,
            extras=0,
            api_key=api_key,
        )
        async for ev in run_session(cfg):
            if not isinstance(ev, RunStarted | RunFinished):
                yield ev
    finally:
        os.unlink(path)
