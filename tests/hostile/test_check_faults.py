"""`kltui check` against a hostile server: every fault of the catalogue gives one line naming
the server, the phase and the fault, the documented exit code, no traceback, and a recording
of everything up to the fault. Plus the retries that are safe, and none that are not."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

from kltui.session.events import Problem, TokensDecoded
from tests.hostile.catalogue import (
    CHECK_CASES,
    EXIT_FAIL,
    EXIT_PASS,
    RETRIES,
    TOPK_EXTRAS,
    Case,
    Retry,
)
from tests.hostile.harness import (
    assert_clean_output,
    assert_recording,
    check_cli,
    check_inproc,
    fault_line,
)
from tests.hostile.server import HUGE_TOKENS, refused_url

# faults after which the client has read every event the server sent (FIN, not RST)
EVERY_EVENT_ARRIVES = {"no-done", "malformed-sse", "stream-error", "close-mid-stream"}


def decoded_tokens(res) -> dict[int, int]:
    got: dict[int, int] = {}
    for e in res.recording.events:
        if isinstance(e, TokensDecoded):
            got[e.sample] = got.get(e.sample, 0) + len(e.token_ids)
    return got


@pytest.mark.parametrize("case", CHECK_CASES, ids=[c.id for c in CHECK_CASES])
async def test_fault_in_check(case: Case, hostile, tmp_path):
    srv = hostile(**case.server) if case.server else None
    url = srv.url if srv else refused_url()
    res = await check_inproc(url, tmp_path, **case.cfg)

    assert res.rc == case.exit, res.out
    assert_clean_output(res)
    label = "error" if case.fatal else "warning"
    fault_line(res, url, case.phase, case.message, label)
    p = assert_recording(res, case.exit, case.phase, case.message, case.fatal)
    assert p.source == url
    if case.protocol is not None:
        # its own finding, as data: the helper is invalid (never pass, never numerics)
        h = res.report["helpers"]["match"]
        assert h["status"] == "invalid" and h["passed"] is False, h["status"]
        assert [f["kind"] for f in h["protocol"]] == [case.protocol]
        (found,) = h["protocol"]
        assert found["message"].startswith(f"match on {url}: ")
        assert found["samples"] and h["reason"].startswith("protocol fault: match on ")
        (fin,) = [e for e in res.recording.events if type(e).__name__ == "HelperFinished"]
        assert fin.summary["protocol"] == h["protocol"]
    if case.sent_once:
        # the failed request was not silently re-sent (it would measure a different batch)
        assert srv.counts[case.sent_once] == 1, dict(srv.counts)
    fault = case.server.get("fault")
    if fault in EVERY_EVENT_ARRIVES:
        assert decoded_tokens(res) == {i: n for i, n in srv.streamed["decode"].items() if n}
    elif fault == "reset-mid-stream" and case.phase == "decode":
        sent = srv.streamed["decode"]
        assert all(n <= sent[i] for i, n in decoded_tokens(res).items())
    if case.exit == EXIT_FAIL:
        h = res.report["helpers"]["match"]
        assert h["status"] == "fail" and h["scored"] == 3 and h["non_finite_tokens"] >= 0
    if case.protocol == "one-sided-non-finite":
        # left out of the k3 figures, not turned into inf
        h = res.report["helpers"]["match"]
        assert h["avg_kl_div"] == 0.0 and h["max_k3"] == 0.0 and h["non_finite_tokens"] == 0
        assert h["protocol"][0]["positions"] == [[0, 1 if "decode" in case.id else 5]]


async def test_restart_between_helpers_keeps_the_first_and_invalidates_the_second(
    hostile, tmp_path
):
    case = next(c for c in CHECK_CASES if c.id == "restart@next-helper")
    srv = hostile(**case.server)
    res = await check_inproc(srv.url, tmp_path, **case.cfg)
    helpers = res.report["helpers"]
    assert helpers["match"]["status"] == "pass" and helpers["match"]["scored"] == 3
    second = helpers["prefill_cache_hit"]
    assert second["status"] == "invalid" and second["scored"] == 0 and not second["passed"]
    assert res.report["verdict"] == "error" and res.rc == 3


async def test_clean_run_is_bit_exact_and_passes(hostile, tmp_path):
    srv = hostile()
    res = await check_inproc(
        srv.url, tmp_path, helpers=["match", "prefill_cache_hit", "decode_cache_hit"]
    )
    assert res.rc == EXIT_PASS, res.out
    for h in res.report["helpers"].values():
        assert h["status"] == "pass" and h["avg_kl_div"] == 0.0 and h["scored"] == 3
    assert not res.report["problems"]


async def test_honest_divergence_is_exit_1_not_an_error(hostile, tmp_path):
    srv = hostile(drift=0.05)
    res = await check_inproc(srv.url, tmp_path)
    assert res.rc == EXIT_FAIL, res.out
    h = res.report["helpers"]["match"]
    assert h["status"] == "fail" and h["avg_kl_div"] > 1e-3
    assert_clean_output(res)


async def test_huge_but_legitimate_answer_is_measured(hostile, tmp_path):
    """100k tokens asked for and delivered: parsed, scored and recorded, not rejected."""
    srv = hostile(incremental=True)
    res = await check_inproc(
        srv.url, tmp_path, samples=1, max_new_tokens=HUGE_TOKENS, request_timeout=60.0
    )
    assert res.rc == EXIT_PASS, res.out
    h = res.report["helpers"]["match"]
    assert h["tokens"] == HUGE_TOKENS and h["avg_kl_div"] == 0.0
    assert decoded_tokens(res) == {0: HUGE_TOKENS}


@pytest.mark.parametrize("retry", RETRIES, ids=[r.id for r in RETRIES])
async def test_safe_requests_are_retried_with_backoff(retry: Retry, hostile, tmp_path):
    clean = hostile()
    base = await check_inproc(clean.url, tmp_path)
    assert base.rc == EXIT_PASS
    srv = hostile(**retry.server)
    (tmp_path / "r").mkdir()
    res = await check_inproc(srv.url, tmp_path / "r", request_timeout=0.5)
    assert res.rc == EXIT_PASS, res.out
    assert srv.hits, "the fault never fired"
    assert srv.counts[retry.counted] == clean.counts[retry.counted] + retry.extra
    # the run measured the same thing as a clean one
    assert res.report["helpers"]["match"]["avg_kl_div"] == 0.0
    for phase in ("tokenize", "decode", "prefill"):
        assert srv.counts[phase] == clean.counts[phase]


@pytest.mark.parametrize("phase", ["decode", "prefill", "tokenize"])
async def test_generate_is_never_resent_even_on_a_transient_status(phase, hostile, tmp_path):
    # 503 is retried for /health, /server_info and /flush_cache; never for /generate
    srv = hostile(fault="http-error", phase=phase, status=503)
    res = await check_inproc(srv.url, tmp_path)
    assert res.rc == 3 and srv.counts[phase] == 1, dict(srv.counts)


# ---------------------------------------------------------------- the same through the CLI

CLI_CASES = ["reset-mid-stream@decode", "http-500-body@prefill"]
CLI_CASES += ["restart@flush", "logprob-nan@decode", "timeout@decode"]


@pytest.mark.parametrize("case_id", CLI_CASES)
def test_fault_through_the_cli(case_id, hostile, tmp_path):
    case = next(c for c in CHECK_CASES if c.id == case_id)
    srv = hostile(**case.server) if case.server else None
    url = srv.url if srv else refused_url()
    res = check_cli(url.removeprefix("http://"), tmp_path, **case.cfg)
    assert res.rc == case.exit, res.out
    assert_clean_output(res)
    line = fault_line(res, url, case.phase, case.message, "error" if case.fatal else "warning")
    assert_recording(res, case.exit, case.phase, case.message, case.fatal)
    # an error goes to stderr, the results, the verdict and the recording's path to stdout
    assert (line in res.stderr.splitlines()) == case.fatal, res.stderr
    stdout = res.out.removesuffix(res.stderr)
    assert stdout.rstrip().endswith(f"recording: {tmp_path / 'r.kltui.jsonl'}")


def test_backoff_really_waits_between_attempts(tmp_path):
    """Through the CLI, with the real delays: 4 attempts at /health, 0.25 + 0.5 + 1 s apart."""
    url = refused_url()
    t0 = time.monotonic()
    res = check_cli(url.removeprefix("http://"), tmp_path)
    elapsed = time.monotonic() - t0
    assert res.rc == 3
    line = fault_line(res, url, "connect", r"cannot connect for /health")
    waited = float(re.search(r"after 4 attempts over ([0-9.]+) s", line).group(1))
    assert 1.7 <= waited <= elapsed


def test_api_key_less_server_answers_401_with_a_hint(hostile, tmp_path):
    srv = hostile(fault="http-error", phase="health", status=401, times=0)
    res = check_cli(srv.address, tmp_path)
    assert res.rc == 3
    fault_line(res, srv.url, "connect", r"wants an API key \(--api-key or KLTUI_API_KEY\)")
    assert srv.counts["health"] == 1  # a 401 will not change on retry


def test_prompt_set_tokens_survive_in_the_recording(hostile, tmp_path):
    """Replaying the recording of a failed run shows the tokens decoded before the fault."""
    srv = hostile(fault="no-done", phase="decode")
    res = check_cli(srv.address, tmp_path)
    assert res.rc == 3
    events = [e for e in res.recording.events if isinstance(e, TokensDecoded)]
    assert events and all(np.all(e.token_ids >= 3) for e in events)
    assert decoded_tokens(res) == srv.streamed["decode"]


async def test_id_quirk_is_reported_per_token_and_scored(hostile, tmp_path):
    """A per-id quirk at a compared position is listed per token (JSON, recording) and still
    scored, so avg_kl_div stays SGLang's mean over every sample."""
    srv = hostile(fault="id-quirk", phase="prefill")
    res = await check_inproc(srv.url, tmp_path)
    assert res.rc == 0, res.out
    h = res.report["helpers"]["match"]
    assert h["scored"] == 3 and h["status"] == "pass"
    assert h["id_mismatch_tokens"] >= 1
    first = h["id_mismatches"][0]
    assert first["sample"] == 0 and first["reported"] == 0 and first["sent"] != 0
    per = {s["index"]: s for s in h["per_sample"]}
    assert [first["position"], 0] in per[0]["id_mismatch"]
    scored = [e for e in res.recording.events if type(e).__name__ == "SampleScored"]
    assert scored[0].id_mismatch and scored[0].id_mismatch[-1] == [len(scored[0].token_ids) - 1, 0]
    assert all(e.id_mismatch is None for e in scored[1:])


async def test_decode_cache_hit_sends_sglangs_requests(hostile, tmp_path):
    """Turn 1 asks for logprobs as sglang.test.kl_test_utils does; the warm-up does not."""
    srv = hostile()
    res = await check_inproc(srv.url, tmp_path, helpers=["prefill_cache_hit", "decode_cache_hit"])
    assert res.rc == 0, res.out
    gens = [r.body for r in srv.requests if r.path == "/generate" and "input_ids" in r.body]
    turn1 = [r.body for r in srv.requests if r.phase == "turn1"]
    assert len(turn1) == 1
    assert turn1[0]["return_logprob"] is True and turn1[0]["logprob_start_len"] == -1
    assert turn1[0]["return_text_in_logprobs"] is False
    warm = [
        b
        for b in gens
        if b["sampling_params"]["max_new_tokens"] == 0 and not b.get("return_logprob")
    ]
    assert len(warm) == 1
    for b in gens:
        assert b["sampling_params"]["ignore_eos"] is True
        assert b["sampling_params"]["temperature"] == 0.0


async def test_check_says_that_it_flushed(hostile, tmp_path):
    srv = hostile()
    res = await check_inproc(srv.url, tmp_path)
    assert res.rc == 0, res.out
    (line,) = [ln for ln in res.out.splitlines() if ln.startswith("flushed the radix cache")]
    assert f"of {srv.url} {srv.counts['flush']} time(s)" in line
    assert "every client of that server" in line


async def test_topk_sum_above_one_in_the_extras_is_a_protocol_warning(hostile, tmp_path):
    """Top-k alternatives of the drill-down's request that sum above 1: one warning naming
    helper, server, sample and positions; that top-k is not shown. The gate is decided
    before the extras (and never reads top-k), so its pass stands."""
    case = TOPK_EXTRAS
    srv = hostile(**case.server)
    res = await check_inproc(srv.url, tmp_path, **case.cfg)
    assert res.rc == case.exit, res.out
    assert_clean_output(res)
    assert srv.hits == ["prefill"]  # the extras request (the second prefill-only one)
    fault_line(res, srv.url, case.phase, case.message, "warning")
    (p,) = [q for q in res.report["problems"] if "protocol fault" in q["message"]]
    assert not p["fatal"] and p["source"] == srv.url
    assert not [e for e in res.recording.events if type(e).__name__ == "ExtrasFetched"]
    h = res.report["helpers"]["match"]
    assert h["status"] == "pass" and h["protocol"] == []


async def test_rid_ties_answers_to_prompts_without_prompt_tokens(hostile, tmp_path):
    """No prompt_tokens, but the request id echoed as meta_info.id (as SGLang does): every
    answer is tied to its prompt, so nothing is flagged."""
    srv = hostile(prompt_tokens=False)
    res = await check_inproc(srv.url, tmp_path)
    assert res.rc == EXIT_PASS, res.out
    h = res.report["helpers"]["match"]
    assert h["status"] == "pass" and h["protocol"] == []
    decode = [r.body for r in srv.requests if r.phase == "decode"]
    assert len(decode) == 1 and len(set(decode[0]["rid"])) == 3


async def test_the_prompt_id_quirk_is_said_once_per_helper(hostile, tmp_path):
    """multiturn replays every turn on its own: a server quirk at prompt positions is one
    warning for the helper, not one per turn (30 on a real Qwen3-Next-shaped run)."""
    srv = hostile(fault="id-quirk", phase="prefill", times=0)  # every replay
    res = await check_inproc(
        srv.url,
        tmp_path,
        helpers=["multiturn"],
        max_new_tokens=4,
        multiturn_groups=1,
        multiturn_branches=2,
        multiturn_prefix=8,
        multiturn_branch_suffix=4,
        multiturn_branch_step=2,
        multiturn_turn_suffixes=[4],
    )
    replays = [r for r in srv.requests if r.phase == "prefill"]
    warned = [
        p
        for p in res.recording.events
        if isinstance(p, Problem) and "prompt position(s)" in p.message
    ]
    assert len(replays) >= 2 and len(warned) == 1, (len(replays), res.out[-2000:])
