"""Real SGLang 0.5.23 started with --skip-tokenizer-init (ids in, ids out, as RL rollout servers
run): kltui's three helpers, given the checkpoint's tokenizer, give the numbers SGLang's own
helpers give on the same server and the same ids, bit for bit."""

from __future__ import annotations

import asyncio
import json
import re
import textwrap
from collections.abc import Iterator

import httpx
import pytest

from kltui.reference.tokenizer import TextTokenizer
from kltui.run.builtin_prompts import PROMPTS
from kltui.run.config import RunConfig
from kltui.run.runner import run_session
from kltui.session.events import HelperFinished, Problem, SampleScored

from .conftest import _NUM, CHECKPOINT, run_in_sglang_env

HELPERS = {
    "match": "test_input_output_logprobs_match_helper",
    "prefill_cache_hit": "test_input_output_logprobs_match_prefill_cache_hit_helper",
    "decode_cache_hit": "test_input_output_logprobs_match_decode_cache_hit_helper",
}
NUM_SAMPLES, MAX_PROMPT_TOKENS = 48, 3000  # get_input_ids' cache key for its defaults
SAMPLES, NEW_TOKENS = 4, 16


@pytest.fixture(scope="module")
def notok_url(servers) -> Iterator[str]:
    yield servers.get("sglang-notok", "sglang", "--skip-tokenizer-init")
    servers.stop("sglang-notok")


@pytest.fixture(scope="module")
def ids_cache(tmp_path_factory) -> tuple[str, str]:
    """(XDG cache root, file): the input-id cache SGLang's get_input_ids reads, made of the
    built-in prompts tokenized locally (the server cannot), 48 tokens at most each."""
    tok = TextTokenizer(CHECKPOINT)
    ids = [tok.encode(p)[:48] for p in PROMPTS[:NUM_SAMPLES]]
    root = tmp_path_factory.mktemp("xdg")
    folder = root / "sglang" / "longbench"
    folder.mkdir(parents=True)
    safe = str(CHECKPOINT).replace("/", "_").replace("\\", "_")
    path = folder / f"input_ids_{safe}_{MAX_PROMPT_TOKENS}_{NUM_SAMPLES}.json"
    path.write_text(json.dumps(ids))
    return str(root), str(path)


@pytest.fixture(scope="module")
def kltui_run(notok_url, ids_cache) -> list:
    cfg = RunConfig(
        servers=[notok_url],
        helpers=list(HELPERS),
        samples=SAMPLES,
        max_new_tokens=NEW_TOKENS,
        prompts=ids_cache[1],
        tokenizer=str(CHECKPOINT),
        extras=0,
    )

    async def collect():
        return [ev async for ev in run_session(cfg)]

    return asyncio.run(collect())


@pytest.fixture(scope="module")
def sglang_run(notok_url, ids_cache, kltui_run) -> dict[str, str]:
    """SGLang's own three helpers (and its tokenizer's ","), one process, after kltui's run."""
    code = textwrap.dedent(
        f"""
        import traceback
        from sglang.srt.utils.hf_transformers_utils import get_tokenizer
        from sglang.test import kl_test_utils as k
        model = {str(CHECKPOINT)!r}
        print("=== comma", get_tokenizer(model).encode(","), flush=True)
        for name in {list(HELPERS.values())!r}:
            print(f"=== {{name}}", flush=True)
            try:
                getattr(k, name)({notok_url!r}, {{model: {{"kl_div": 0.002}}}}, model,
                                 max_samples={SAMPLES}, max_new_tokens={NEW_TOKENS})
                print("KLTUI-HELPER-PASSED", flush=True)
            except BaseException:
                traceback.print_exc(file=__import__("sys").stdout)
        """
    )
    proc = run_in_sglang_env(code, env={"XDG_CACHE_HOME": ids_cache[0]})
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    blocks = proc.stdout.split("=== ")[1:]
    return {b.split("\n", 1)[0].split(" ")[0].strip(): b for b in blocks}


def test_the_server_refuses_text(notok_url):
    r = httpx.post(f"{notok_url}/generate", json={"text": "hi"}, timeout=60)
    assert r.status_code == 400 and "cannot accept text prompts" in r.text
    assert httpx.get(f"{notok_url}/server_info", timeout=60).json()["skip_tokenizer_init"] is True


def test_kltui_runs_every_helper_on_ids(kltui_run):
    assert not [ev for ev in kltui_run if isinstance(ev, Problem) and ev.fatal]
    done = {ev.helper: ev.summary for ev in kltui_run if isinstance(ev, HelperFinished)}
    assert sorted(done) == sorted(HELPERS)
    assert all(s["status"] == "pass" and s["scored"] >= 2 for s in done.values()), done


def test_separator_is_sglangs(kltui_run, sglang_run):
    done = {ev.helper: ev.summary for ev in kltui_run if isinstance(ev, HelperFinished)}
    comma = json.loads(sglang_run["comma"].split(" ", 1)[1].strip())
    assert done["decode_cache_hit"]["separator_ids"] == comma


@pytest.mark.parametrize("helper", HELPERS)
def test_numbers_equal_sglangs_own_helpers(kltui_run, sglang_run, helper):
    out = sglang_run[HELPERS[helper]]
    assert "KLTUI-HELPER-PASSED" in out, out[-4000:]
    divs = re.search(r"^kl_divs=(.*)$", out, re.M).group(1)
    kl_divs = [float(x) for x in re.findall(_NUM, divs.replace("np.float64", ""))]
    avg = float(re.findall(_NUM, re.search(r"^avg_kl_div=(.*)$", out, re.M).group(1))[0])
    scored = [ev for ev in kltui_run if isinstance(ev, SampleScored) and ev.helper == helper]
    summary = next(
        ev.summary for ev in kltui_run if isinstance(ev, HelperFinished) and ev.helper == helper
    )
    per_sample = {p["index"]: p["mean_k3"] for p in summary["per_sample"]}
    print(
        f"[real] {helper}: avg_kl_div kltui {summary['avg_kl_div']!r} SGLang {avg!r}, kl_divs {kl_divs}"
    )
    assert [per_sample[ev.sample] for ev in scored] == kl_divs
    assert summary["avg_kl_div"] == avg
