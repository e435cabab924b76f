"""Servers started with --skip-tokenizer-init (ids in, ids out): the reference server refuses
text as SGLang 0.5.23 does, and every helper runs on ids, with a local tokenizer (--tokenizer)
or with --separator-ids and a token-id prompt file; each missing piece is a one-line error."""

from __future__ import annotations

import json

import httpx
import orjson
import pytest

from kltui.cli import main
from kltui.engines.sglang import SGLangClient
from kltui.reference import CHECKPOINT_DIR
from kltui.reference.tokenizer import TextTokenizer
from kltui.run.config import RunConfig
from kltui.run.prompt_ids import build_prompt_set
from kltui.run.tokenizer import load
from kltui.session.recording import read_recording
from kltui.session.servers import NO_TOKENIZER
from tests.integration.checkrun import check_run

NO_TOK = ("--skip-tokenizer-init",)
SMALL = dict(samples=6, max_new_tokens=16, max_prompt_tokens=48)
HELPERS = ("match", "prefill_cache_hit", "decode_cache_hit")
# tokenizer_manager.TokenizerManager._tokenize_one_request, SGLang 0.5.23, verbatim
SGLANG_MESSAGE = (
    "The engine initialized with skip_tokenizer_init=True cannot accept text prompts. Please "
    "provide input_ids or re-initialize the engine with skip_tokenizer_init=False."
)


@pytest.fixture
def no_tok(reference_servers) -> str:
    # default kernels: real rounding noise, so the extras pass has divergences to fetch
    return reference_servers.url(extra_args=NO_TOK)


async def check(url: str, tmp_path, **kw) -> tuple[int, dict, str]:
    return await check_run(url, tmp_path, width=200, **{**SMALL, **kw})


def ids_file(tmp_path, n: int = 6) -> str:
    tok = TextTokenizer(CHECKPOINT_DIR)
    texts = ["The quick brown fox", "Once upon a time, there was", "In the beginning"] * 2
    path = tmp_path / "ids.json"
    path.write_text(json.dumps([tok.encode(t) for t in texts[:n]]))
    return str(path)


async def test_reference_refuses_text_as_sglang_does(no_tok):
    async with httpx.AsyncClient(base_url=no_tok) as c:
        r = await c.post("/generate", json={"text": ["hi"], "sampling_params": {}})
        assert r.status_code == 400
        assert r.json() == {"error": {"message": SGLANG_MESSAGE}}
        r = await c.post("/generate", json={"text": "hi", "stream": True})
        assert r.status_code == 200  # a stream has started before the tokenizer refuses
        first = orjson.loads(r.text.split("\n\n")[0].removeprefix("data: "))
        assert first == {
            "error": {
                "message": SGLANG_MESSAGE,
                "type": "invalid_request_error",
                "code": 400,
                "retryable": False,
            }
        }
        assert r.text.rstrip().endswith("data: [DONE]")
        r = await c.post(
            "/generate",
            json={
                "input_ids": [[0, 5, 6]],
                "return_logprob": True,
                "return_text_in_logprobs": True,
                "sampling_params": {"max_new_tokens": 2, "temperature": 0},
            },
        )
        (obj,) = r.json()
        assert "text" not in obj  # BatchTokenIDOutput: output_ids and meta_info only
        assert [e[2] for e in obj["meta_info"]["output_token_logprobs"]] == [None, None]
        assert (await c.get("/server_info")).json()["skip_tokenizer_init"] is True


async def test_every_helper_with_a_local_tokenizer(no_tok, reference_servers, tmp_path):
    rc, res, text = await check(no_tok, tmp_path, tokenizer=str(CHECKPOINT_DIR))
    assert rc == 0, text
    for name in HELPERS:
        h = res["helpers"][name]
        assert h["scored"] == 6 and 0.0 < h["avg_kl_div"] < 1e-3, (name, h)
    dch = res["helpers"]["decode_cache_hit"]
    # kl_test_utils' tokenizer.encode(","): BOS + ","
    assert dch["separator_ids"] == load(str(CHECKPOINT_DIR)).encode(",") == [0, 15]
    assert dch["separator_source"].startswith("local tokenizer")
    # the console wraps the server line where it must: the fact may straddle a line break
    assert res["servers"][0]["skip_tokenizer_init"] is True
    assert NO_TOKENIZER in " ".join(text.split())  # its words (golden: tests/unit/words)
    # the drill-down's token text comes from the local tokenizer
    extras = [
        e
        for e in read_recording(str(tmp_path / "r.jsonl")).events
        if type(e).__name__ == "ExtrasFetched"
    ]
    assert extras and all(e.texts is not None for e in extras)
    tok = TextTokenizer(CHECKPOINT_DIR)
    assert extras[0].texts == [tok.token_text[int(t)] for t in extras[0].token_ids]
    # the built-in prompts tokenized here are the ids a server with a tokenizer makes of them
    (tmp_path / "b").mkdir()
    rc2, res2, _ = await check(reference_servers.url(), tmp_path / "b", helpers=["match"])
    assert rc2 == 0 and res2["prompt_set"]["sha256"] == res["prompt_set"]["sha256"]
    assert res2["servers"][0]["skip_tokenizer_init"] is None  # the JSON has every key


async def test_every_helper_with_separator_ids_and_no_tokenizer(no_tok, tmp_path):
    rc, res, text = await check(no_tok, tmp_path, prompts=ids_file(tmp_path), separator_ids=[0, 15])
    assert rc == 0, text
    for name in HELPERS:
        assert res["helpers"][name]["scored"] == 6, (name, res["helpers"][name])
    assert res["helpers"]["decode_cache_hit"]["separator_ids"] == [0, 15]
    assert res["helpers"]["decode_cache_hit"]["separator_source"] == "--separator-ids"
    extras = [
        e
        for e in read_recording(str(tmp_path / "r.jsonl")).events
        if type(e).__name__ == "ExtrasFetched"
    ]
    assert extras and all(e.texts is None for e in extras)  # ids only: no text is made up


def run_cli(capsys, *argv) -> tuple[int, str]:
    rc = main(["check", *argv, "--samples", "2", "--max-new-tokens", "4", "--no-record"])
    return rc, capsys.readouterr().err


def test_builtin_prompts_without_tokenizer_name_both_ways_out(no_tok, capsys):
    rc, err = run_cli(capsys, "--server", no_tok, "--helpers", "match")
    assert rc == 2
    assert err.count("\n") == 1 and "has no tokenizer (started with --skip-tokenizer-init)" in err
    assert "--tokenizer PATH" in err and "--prompts ids.json" in err


def test_decode_cache_hit_without_separator_names_the_fix(no_tok, capsys, tmp_path):
    rc, err = run_cli(capsys, "--server", no_tok, "--prompts", ids_file(tmp_path))
    assert rc == 2 and err.count("\n") == 1
    assert "decode_cache_hit's separator" in err and "--separator-ids IDS" in err
    assert "--tokenizer PATH" in err
    # nothing else is missing for the single-turn helpers
    rc, err = run_cli(capsys, "--server", no_tok, "--prompts", ids_file(tmp_path), "--helpers",
                      "match,prefill_cache_hit")  # fmt: skip
    assert rc == 0, err


def test_bad_tokenizer_and_separator_options_are_usage_errors(capsys, tmp_path):
    rc, err = run_cli(capsys, "--server", "127.0.0.1:9", "--tokenizer", str(tmp_path / "nope"))
    assert rc == 2 and err.count("\n") == 1 and "local Hugging Face cache" in err
    rc, err = run_cli(capsys, "--server", "127.0.0.1:9", "--separator-ids", "1,x")
    assert rc == 2 and "--separator-ids" in err


async def test_a_400_answer_is_detected_when_server_info_does_not_say(no_tok):
    """Older or proxied servers may not report skip_tokenizer_init: their 400 answer tells."""
    cfg = RunConfig(servers=[no_tok], samples=2, max_prompt_tokens=None)
    info: dict = {}  # as if /server_info said nothing about the tokenizer
    client = SGLangClient(no_tok)
    try:
        pset = await build_prompt_set(cfg, client, info, load(str(CHECKPOINT_DIR)))
    finally:
        await client.aclose()
    assert info["skip_tokenizer_init"] is True
    tok = TextTokenizer(CHECKPOINT_DIR)
    from kltui.run.builtin_prompts import PROMPTS

    assert [p.tolist() for p in pset.ids] == [tok.encode(t) for t in PROMPTS[:2]]


def test_ids_and_separator_ids_need_no_tokenizer_library(no_tok, tmp_path):
    """The H200 case: an ids-only server, an id file and --separator-ids, with neither
    `tokenizers` nor `transformers` importable in the kltui process."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['tokenizers'] = None; sys.modules['transformers'] = None\n"
        "from kltui.cli import main\n"
        "sys.exit(main(sys.argv[1:]))"
    )
    argv = ["check", "--server", no_tok, "--prompts", ids_file(tmp_path), "--separator-ids",
            "0,15", "--samples", "4", "--max-new-tokens", "8", "--no-record"]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for name in HELPERS:
        assert f"{name}" in proc.stdout and "4/4" in proc.stdout
