"""Real SGLang reports token id 0 in input_token_logprobs where the last vocabulary id (1023 in
the shipped 1024-token checkpoint) was sent. kltui warns about it at prompt positions (no
metric reads them) and measures the run, with avg_kl_div equal to SGLang's own figure."""

from __future__ import annotations

import asyncio
import json

import numpy as np

from kltui.engines.sglang import SGLangClient, sampling_params
from kltui.engines.sglang_request import LogprobAsk
from kltui.session.events import HelperFinished, Problem, SampleScored

from .conftest import sglang_compare_kl
from .test_sglang_real import collect, small_config

LAST_ID = 1023
PROMPTS = [
    [1, 40, 75, 12, LAST_ID, 300, 301, 88, 19, 204, LAST_ID, 66, 71],
    [1, 500, LAST_ID, 17, 23, 99, 140, 211, 7, 18, 29, 600],
]


def test_server_reports_another_id_for_the_last_vocabulary_id(sglang_url):
    """The quirk itself, measured (so this tier notices the day SGLang changes)."""

    async def replay():
        client = SGLangClient(sglang_url, timeout=120)
        try:
            return await client.generate(
                PROMPTS,
                sampling_params(max_new_tokens=0, temperature=0.0),
                LogprobAsk(logprob_start_len=0),
            )
        finally:
            await client.aclose()

    results = asyncio.run(replay())
    for r, sent in zip(results, PROMPTS, strict=True):
        sent = np.asarray(sent)
        where = np.flatnonzero(sent == LAST_ID).tolist()
        # the client accepted the answers and kept the positions where the id differs
        assert r.id_mismatch is not None and r.id_mismatch.tolist() == where
        assert set(r.input_logprob_ids[where].tolist()) == {0}


def test_check_runs_and_warns_on_a_prompt_with_the_last_vocabulary_id(sglang_url, tmp_path):
    path = tmp_path / "ids.json"
    path.write_text(json.dumps(PROMPTS))
    cfg = small_config(sglang_url, helpers=["match"], samples=2, max_new_tokens=8)
    cfg.prompts = str(path)
    events = asyncio.run(collect(cfg))
    problems = [e for e in events if isinstance(e, Problem)]
    assert not [p for p in problems if p.fatal], problems
    warned = [p for p in problems if "prompt position(s)" in p.message]
    assert len(warned) == 1 and "sent 1023, reported 0" in warned[0].message, problems
    assert "3 prompt position(s) in 2 sample(s)" in warned[0].message
    scored = [e for e in events if isinstance(e, SampleScored)]
    (summary,) = [e.summary for e in events if isinstance(e, HelperFinished)]
    assert summary["status"] == "pass" and summary["scored"] == 2
    kl_divs, avg = sglang_compare_kl(
        {"match": ([e.lp_a.tolist() for e in scored], [e.lp_b.tolist() for e in scored])}
    )["match"]
    assert summary["avg_kl_div"] == avg
    assert [p["mean_k3"] for p in summary["per_sample"]] == kl_divs
