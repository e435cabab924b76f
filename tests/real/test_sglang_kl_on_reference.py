"""SGLang's own KL helpers (`sglang.test.kl_test_utils`, run in the SGLang environment) against
kltui's embedded reference server: it speaks the protocol well enough for SGLang's CI code."""

from __future__ import annotations

import asyncio
import json
import textwrap

import pytest

from kltui.engines.sglang import SGLangClient
from kltui.run.builtin_prompts import PROMPTS

from .conftest import CHECKPOINT, run_in_sglang_env

# get_input_ids reads this many prompts of at most this many tokens from its file cache (a
# LongBench download otherwise); the helpers then take the first `max_samples` of them.
NUM_SAMPLES = 48
MAX_PROMPT_TOKENS = 3000


@pytest.fixture(scope="module")
def longbench_cache(reference_url, tmp_path_factory) -> str:
    """An XDG cache holding the file `get_input_ids` looks for, made of kltui's built-in
    prompts tokenized by the server (no network, same ids as the server's tokenizer)."""

    async def tokenize():
        async with SGLangClient(reference_url) as c:
            return await c.tokenize(list(PROMPTS[:NUM_SAMPLES]))

    ids = [x[:60].tolist() for x in asyncio.run(tokenize())]
    assert len(ids) == NUM_SAMPLES
    root = tmp_path_factory.mktemp("xdg")
    folder = root / "sglang" / "longbench"
    folder.mkdir(parents=True)
    safe = str(CHECKPOINT).replace("/", "_").replace("\\", "_")
    (folder / f"input_ids_{safe}_{MAX_PROMPT_TOKENS}_{NUM_SAMPLES}.json").write_text(
        json.dumps(ids)
    )
    return str(root)


HELPERS = [
    "test_input_output_logprobs_match_helper",
    "test_input_output_logprobs_match_prefill_cache_hit_helper",
    "test_input_output_logprobs_match_decode_cache_hit_helper",
]


@pytest.fixture(scope="module")
def sglang_helper_output(reference_url, longbench_cache) -> dict[str, str]:
    """Each helper's printed output, all three in one process of the SGLang environment."""
    code = textwrap.dedent(
        f"""
        import traceback
        from sglang.test import kl_test_utils as k
        model = {str(CHECKPOINT)!r}
        for name in {HELPERS!r}:
            print(f"=== {{name}}", flush=True)
            try:
                getattr(k, name)({reference_url!r}, {{model: {{"kl_div": 0.002}}}}, model,
                                 max_samples=6, max_new_tokens=24)
                print("KLTUI-HELPER-PASSED", flush=True)
            except BaseException:
                traceback.print_exc(file=__import__("sys").stdout)
        """
    )
    proc = run_in_sglang_env(code, env={"XDG_CACHE_HOME": longbench_cache})
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    blocks = proc.stdout.split("=== ")[1:]
    return {b.split("\n", 1)[0].strip(): b for b in blocks}


@pytest.mark.parametrize("helper", HELPERS)
def test_sglang_kl_helper_passes_on_the_reference_server(sglang_helper_output, helper):
    out = sglang_helper_output[helper]
    assert "KLTUI-HELPER-PASSED" in out, out[-4000:]
    # the helper really compared numbers (it returns early, silently, on a disabled radix cache)
    assert "avg_kl_div=" in out, out[-4000:]
    assert "Radix cache is disabled" not in out
