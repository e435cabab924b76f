"""kltui's multiturn beside SGLang 0.5.23's own `kl_multiturn_utils` (issue 58), on the same real
SGLang server (CPU, the shipped checkpoint) and the same ids: each conversation's last turn,
the turn SGLang's kit replays, has the same per-sample k3 mean bit for bit, and the same
avg_kl_div; every hit passes SGLang's own asserts.

Greedy (`sampling_temperature=0`, the kit's "0 on request"): SGLang's `_generate` sends no
sampling_seed, so at T=1 two runs on a server without deterministic inference sample different
tokens, and no two runs could be compared token for token."""

from __future__ import annotations

import asyncio
import json
import re
import textwrap

import pytest

from kltui.engines.sglang import SGLangClient
from kltui.helpers.multiturn_plan import build_plan
from kltui.run.builtin_prompts import PROMPTS
from kltui.run.config import RunConfig
from kltui.run.runner import run_session
from kltui.session.events import HelperFinished, HelperStarted, Problem, SampleScored

from .conftest import _NUM, CHECKPOINT, run_in_sglang_env

SHAPE = dict(
    multiturn_groups=2,
    multiturn_branches=2,
    multiturn_prefix=32,
    multiturn_branch_suffix=8,
    multiturn_branch_step=4,
    multiturn_turn_suffixes=[16, 8],
    multiturn_temperature=0.0,
)
NEW_TOKENS = 8


@pytest.fixture(scope="module")
def prompt_file(sglang_url, tmp_path_factory) -> tuple[str, list[list[int]]]:
    """The built-in prompts tokenized by the server, cut to 40 ids, as a token-id file (sent as
    it is): both runs take their prefixes from these ids."""

    async def tokenize():
        async with SGLangClient(sglang_url) as c:
            return await c.tokenize(list(PROMPTS[:2]))

    ids = [x[:40].tolist() for x in asyncio.run(tokenize())]
    path = tmp_path_factory.mktemp("mt") / "ids.json"
    path.write_text(json.dumps(ids))
    return str(path), ids


@pytest.fixture(scope="module")
def kltui_run(sglang_url, prompt_file) -> list:
    cfg = RunConfig(
        servers=[sglang_url],
        helpers=["multiturn"],
        samples=2,
        max_new_tokens=NEW_TOKENS,
        prompts=prompt_file[0],
        **SHAPE,
    )

    async def collect():
        return [ev async for ev in run_session(cfg)]

    return asyncio.run(collect())


def sglang_multiturn(url: str, prefixes, firsts, suffixes) -> str:
    """SGLang's own helper (prefill hit, then the decode-hit turns, interleaved), its print."""
    code = textwrap.dedent(
        f"""
        from sglang.test.kl_multiturn_utils import (
            test_input_output_logprobs_match_prefill_cache_hit_helper as helper,
        )
        helper({url!r}, {str(CHECKPOINT)!r}, float("inf"), prefix_input_ids={prefixes!r},
               full_input_ids={firsts!r}, turn_suffixes={suffixes!r}, branches_per_group=2,
               max_new_tokens={NEW_TOKENS}, sampling_temperature=0)
        print("KLTUI-HELPER-PASSED", flush=True)
        """
    )
    proc = run_in_sglang_env(code, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return proc.stdout


def test_multiturn_last_turn_equals_sglangs_kl_multiturn_utils(sglang_url, prompt_file, kltui_run):
    assert not [p for p in kltui_run if isinstance(p, Problem) and p.fatal]
    (started,) = [e for e in kltui_run if isinstance(e, HelperStarted)]
    (fin,) = [e for e in kltui_run if isinstance(e, HelperFinished)]
    assert fin.summary["status"] == "pass", fin.summary  # every hit as SGLang asserts it
    assert fin.summary["hits"] == fin.summary["scored"] == 12
    vocab = started.settings["vocab"]
    assert (vocab, started.settings["vocab_source"]) == (1024, "config.json of model_path")

    # the same ids the helper sent, built by the same plan from the same prompt ids
    from kltui.run.config import RunConfig as Cfg

    shape = Cfg(**SHAPE).multiturn_shape()
    plan = build_plan(shape, prompt_file[1], vocab)
    out = sglang_multiturn(sglang_url, plan.prefixes, plan.firsts, plan.turn_suffixes)
    assert "KLTUI-HELPER-PASSED" in out, out[-4000:]  # SGLang's own hit asserts passed
    divs_line = re.search(r"^kl_divs=(.*)$", out, re.M).group(1).replace("np.float64", "")
    divs = [float(x) for x in re.findall(_NUM, divs_line)]
    avg = float(re.findall(_NUM, re.search(r"^avg_kl_div=(.*)$", out, re.M).group(1))[0])

    last = shape.turns - 1
    scored = sorted(
        (e for e in kltui_run if isinstance(e, SampleScored) and e.turn == last),
        key=lambda e: (e.group, e.branch),
    )
    assert [e.token_ids.size for e in scored] == [NEW_TOKENS] * 4
    means = {p["index"]: p["mean_k3"] for p in fin.summary["per_sample"]}
    mine = [means[e.sample] for e in scored]
    assert mine == divs  # bit for bit, conversation by conversation
    assert sum(mine) / len(mine) == avg
