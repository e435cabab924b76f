"""The cross-server reading on synthetic runs: which helpers were left uncompared and why, and
what the pattern of differing helpers means."""

import numpy as np

from kltui.engines.identity import ServerIdentity
from kltui.metrics.k3 import ScoreBook
from kltui.readings.coverage import NotTested, Untested
from kltui.readings.cross_server import MissingKind as M
from kltui.readings.cross_server import PairKind as P
from kltui.readings.cross_server import Skipped, cross_server
from kltui.readings.cross_server import SuspectKind as S
from kltui.readings.identity import CheckBasis
from kltui.readings.identity import models_differ as differ
from kltui.registry import path_of
from kltui.session.events import (
    HelperFinished,
    HelperStarted,
    Problem,
    RunFinished,
    RunStarted,
    SampleScored,
    SampleSkipped,
)
from kltui.session.store import SessionStore
from kltui.words.cross_server import pair_json

A, B = "http://127.0.0.1:1", "http://127.0.0.1:2"
N = 4


def run(helpers: list[str], servers: list[dict] | None = None) -> SessionStore:
    store = SessionStore()
    servers = servers or [{"url": A, "page_size": 1}, {"url": B, "page_size": 4}]
    store.apply(RunStarted("r", 0.0, {"helpers": helpers}, servers, {}, "0"))
    return store


def helper(store, name, url, noise=0.0, skip=None):
    """`name` on `url`: N samples scored (side A off by `noise`), or all skipped for `skip`."""
    store.apply(HelperStarted(name, url, N, 1e-3, 1e-3))
    rng = np.random.default_rng(0)
    book = ScoreBook()
    for i in range(N):
        if skip:
            store.apply(SampleSkipped(name, url, i, f"{skip} (cached_tokens=0)"))
            continue
        b = -rng.random(10)
        a = b - noise  # below b: a logprob stays <= 0 (above 0 is a protocol fault)
        book.add(i, np.arange(10), a, b)
        store.apply(SampleScored(name, url, i, np.arange(10), a, b, 5, 20))
    summary = book.summary(n_samples=N, n_skipped=N if skip else 0, threshold=1e-3)
    store.apply(HelperFinished(name, url, summary))


def kinds(pair) -> dict:
    """Helper -> (why, side) for every helper not compared."""
    return {h: [(m.kind, m.label) for m in ms] for h, ms in pair.uncompared.items()}


def test_every_sample_skipped_on_b_is_not_compared_and_not_identical():
    store = run(["match", "prefill_cache_hit"])
    for url in (A, B):
        helper(store, "match", url)
    helper(store, "prefill_cache_hit", A, noise=1e-3)
    helper(store, "prefill_cache_hit", B, skip="prefill cache miss")
    (pair,) = cross_server(store)
    assert pair.identical is None
    ((why,),) = pair.uncompared.values()
    assert (why.kind, why.label, why.skipped) == (
        M.SKIPPED, "B", Skipped(4, 4, (("prefill cache miss", 4),), 0, "cached_tokens=0")
    )  # fmt: skip
    assert pair.reading.kind == P.PARTLY_IDENTICAL and pair.reading.compared == ("match",)


def test_b_unreachable_from_the_start_is_named_per_helper():
    servers = [{"url": A, "engine": "sglang"}, {"url": B, "engine": "sglang", "error": "down"}]
    store = run(["match"], servers)
    store.apply(Problem(B, "connection refused (phase: connect)", fatal=True, phase="connect"))
    helper(store, "match", A)
    (pair,) = cross_server(store)
    assert pair.identical is None and pair.helpers == {}
    assert kinds(pair) == {"match": [(M.ERRORED_BEFORE, "B")]}
    assert pair.reading.kind == P.NOTHING_COMPARED


def test_match_differing_means_kernels():
    store = run(["match", "prefill_cache_hit"])
    for url, noise in ((A, 0.0), (B, 1e-4)):
        helper(store, "match", url, noise)
        helper(store, "prefill_cache_hit", url, noise)
    (pair,) = cross_server(store)
    assert pair.identical is False
    assert pair.reading.kind == P.KERNELS and pair.reading.suspects == ()


def test_cache_helper_differing_with_match_exact_names_the_server():
    store = run(["match", "decode_cache_hit"])
    for url in (A, B):
        helper(store, "match", url)
    helper(store, "decode_cache_hit", A, noise=1e-2)
    helper(store, "decode_cache_hit", B)
    (pair,) = cross_server(store)
    assert pair.identical is False
    assert pair.reading.kind == P.CACHE_PATH
    ((h, kind, server, path),) = [
        (s.helper, s.kind, s.server, s.path) for s in pair.reading.suspects
    ]
    assert (h, kind, server, path) == ("decode_cache_hit", S.ONE_SERVER, "A", path_of(h))


def test_helpers_differing_without_match_cannot_tell_kernels_from_state():
    store = run(["prefill_cache_hit"])
    helper(store, "prefill_cache_hit", A, noise=1e-2)
    helper(store, "prefill_cache_hit", B)
    (pair,) = cross_server(store)
    assert pair.identical is False
    assert pair.reading.kind == P.BASELINE_NOT_COMPARED and pair.reading.suspects == ()


def test_helper_not_asked_on_b_is_named():
    store = run(["match"])
    helper(store, "match", A)
    helper(store, "match", B)
    helper(store, "prefill_cache_hit", A)  # e.g. a recording cut short
    (pair,) = cross_server(store)
    assert kinds(pair) == {"prefill_cache_hit": [(M.NOT_RUN_YET, "B")]}
    assert pair.identical is None
    store.apply(RunFinished({}, "fail"))
    (pair,) = cross_server(store)
    assert kinds(pair) == {"prefill_cache_hit": [(M.DID_NOT_RUN, "B")]}


def test_a_run_still_going_says_so():
    store = run(["match"])
    helper(store, "match", A)
    store.apply(HelperStarted("match", B, N, 1e-3, 1e-3))
    (pair,) = cross_server(store)
    assert kinds(pair) == {"match": [(M.STILL_RUNNING, "B")]}
    assert pair.identical is None and pair.reading.kind == P.NOTHING_COMPARED


def test_models_differ_by_path_name_or_weight_version():
    def models_differ(a: dict, b: dict) -> tuple | None:
        check = differ(ServerIdentity.of(a), ServerIdentity.of(b))
        return None if check is None else (check.basis, check.a, check.b)

    local = {"model_path": "/data/models/Llama-3.1-8B"}
    assert models_differ(local, {"model_path": "meta-llama/Llama-3.1-8B"}) is None
    assert models_differ(local, {"model_path": "/data/models/Qwen3-8B"}) == (
        CheckBasis.MODEL_PATH,
        "/data/models/Llama-3.1-8B",
        "/data/models/Qwen3-8B",
    )
    assert models_differ({**local, "weight_version": "a"}, {**local, "weight_version": "b"}) == (
        CheckBasis.WEIGHT_VERSION,
        "a",
        "b",
    )
    assert models_differ(local, {"url": "x"}) is None  # unknown is no evidence
    # a served name is an alias: two paths decide even when the aliases agree
    aliased = {"model_path": "/m/Qwen3-8B", "served_model_name": "llm"}
    assert models_differ({**local, "served_model_name": "llm"}, aliased) is not None


def test_the_same_model_name_without_a_weights_check_is_unverified_not_the_same_model():
    """Issue 28 item 8: two remote servers named alike whose weights nothing verifies."""
    servers = [
        {"url": A, "model_path": "/models/llama-8b", "weight_version": "default"},
        {"url": B, "model_path": "/other/llama-8b", "weight_version": "default"},
    ]
    store = run(["match"], servers)
    helper(store, "match", A)
    helper(store, "match", B, noise=1e-2)
    (pair,) = cross_server(store)
    assert pair.same_model is None
    assert pair.model_check is not None and pair.model_check.state == "unverified"
    assert pair.reading.kind == P.KERNELS
    assert pair.reading.unverified == pair.model_check
    assert (pair.model_check.basis, pair.model_check.name) == (CheckBasis.NOTHING, "llama-8b")
    assert pair_json(pair)["model_check"]["state"] == "unverified"


def test_a_side_that_scored_too_few_samples_is_not_compared_never_identical():
    """coverage's one rule: B scored 1 of 4 samples (the rest missed the cache), bit-identical
    to A there; one sample is no test of B's path, so the pair is not called identical."""
    store = run(["match"])
    helper(store, "match", A)
    store.apply(HelperStarted("match", B, N, 1e-3, 1e-3))
    rng = np.random.default_rng(0)
    book = ScoreBook()
    b = -rng.random(10)
    book.add(0, np.arange(10), b, b)
    store.apply(SampleScored("match", B, 0, np.arange(10), b, b, 5, 20))
    for i in range(1, N):
        store.apply(SampleSkipped("match", B, i, "cache miss (cached_tokens=0)"))
    store.apply(HelperFinished("match", B, book.summary(n_samples=N, n_skipped=3, threshold=1e-3)))
    (pair,) = cross_server(store)
    assert pair.identical is None and "match" not in pair.helpers
    ((why,),) = pair.uncompared.values()
    assert (why.kind, why.label) == (M.NOT_TESTED, "B")
    assert why.untested == Untested(NotTested.FEW_SCORED, 1, 4, need=2)
