"""A fleet's verdicts rest on enough evidence (issue 28, item 6): replicas group only on helpers
both tested with enough common samples; a replica compared on some paths only is put aside,
never bridging two groups or voting a healthy replica out; `identical`, `--fleet-require
identical` and the JUnit fleet case need every replica compared on every path; a setting is
named as what separates the groups only when it is known and constant within every group."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator

import numpy as np

from kltui.metrics.k3 import ScoreBook
from kltui.outputs.reports.html import fleet_html
from kltui.outputs.reports.junit import replica_cases
from kltui.readings.coverage import NotTested, Untested
from kltui.readings.fleet import fleet
from kltui.readings.fleet_model import Aside, AsideKind, Fleet, Shortfall, ShortKind
from kltui.session.events import (
    Event,
    HelperFinished,
    HelperStarted,
    Problem,
    RunFinished,
    RunStarted,
    SampleScored,
    SampleSkipped,
)
from kltui.session.store import SessionStore
from kltui.words.fleet import aside_words, failure_line, replica_cells
from tests.tui import synth

HELPERS = ("match", "prefill_cache_hit", "decode_cache_hit")
ROUTER = "http://127.0.0.1:30000"
N = 8


def url(name: str) -> str:
    return f"http://10.0.0.{ord(name) - ord('A') + 1}:30000"


A, B, C, D = (url(x) for x in "ABCD")


def started(servers: dict[str, dict], require: str = "identical") -> SessionStore:
    """A fleet run over `servers` (url -> the settings its /server_info reports), in that order."""
    store = SessionStore()
    workers = [
        {"url": u, "worker_type": "regular", "is_healthy": True, "tested": True, "note": None}
        for u in servers
    ]
    config = {
        "helpers": list(HELPERS),
        "samples": N,
        "router": ROUTER,
        "fleet_require": require,
        "fleet": {"router": ROUTER, "workers": workers},
    }
    identities = [synth.server(u, **over) for u, over in servers.items()]
    store.apply(RunStarted("r", 0.0, config, identities, {}, "0"))
    return store


def helper_events(
    helper: str, u: str, seed: int, skip: tuple[int, ...] = (), changed: tuple[int, ...] = ()
) -> Iterator[Event]:
    """`helper` on replica `u`: each sample's numbers depend on (seed, sample) only, so two
    replicas with one seed agree bit for bit on every sample both scored (`changed`: samples
    drawn from another seed)."""
    yield HelperStarted(helper, u, N, 2e-3, 1e-3)
    book = ScoreBook()
    cached = 0 if helper == "match" else 24
    for s in range(N):
        if s in skip:
            yield SampleSkipped(helper, u, s, "prefill cache miss (cached_tokens=0)")
            continue
        rng = np.random.default_rng([seed + 100 * (s in changed), s])
        ids = rng.integers(3, 500, size=16)
        b = -np.abs(rng.normal(0.8, 0.6, size=16))
        a = b + rng.normal(0, 1e-6, size=16)
        book.add(s, ids, a, b, cached, 40)
        yield SampleScored(helper, u, s, ids, a, b, cached, 40)
    summary = book.summary(n_samples=N, n_skipped=len(skip), threshold=2e-3)
    summary["status"] = "pass" if summary["passed"] else "fail"
    yield HelperFinished(helper, u, summary)


def ran(
    store: SessionStore,
    u: str,
    seeds: dict[str, int] | None = None,
    changed: dict[str, tuple[int, ...]] | None = None,
    **skips,
) -> None:
    """Every helper on replica `u`: the same numbers as any other replica's unless `seeds`
    gives the helper another seed (or `changed` other numbers on some samples);
    `skips[helper]`: the samples that helper skipped."""
    for k, h in enumerate(HELPERS):
        seed = (seeds or {}).get(h, k)
        for ev in helper_events(h, u, seed, skips.get(h, ()), (changed or {}).get(h, ())):
            store.apply(ev)


def died_after_match(store: SessionStore, u: str) -> None:
    for ev in helper_events("match", u, 0):
        store.apply(ev)
    store.apply(
        Problem(u, "connection refused (phase: flush)", True, "prefill_cache_hit", phase="flush")
    )


def vacuous(store: SessionStore, u: str, helper: str) -> None:
    why = f"{helper} is vacuous: the server runs with disable_radix_cache=true"
    store.apply(HelperStarted(helper, u, N, 2e-3, 1e-3))
    summary = {"status": "vacuous", "reason": why, "samples": N, "scored": 0, "skipped": 0}
    store.apply(HelperFinished(helper, u, summary))


def done(store: SessionStore) -> Fleet:
    store.apply(RunFinished({}, "pass"))
    f = fleet(store)
    assert f is not None
    return f


def junit_cases(f: Fleet) -> dict[str, ET.Element]:
    """The fleet's JUnit test cases (what junit_report writes for a fleet run), by name."""
    suite = ET.Element("testsuite")
    replica_cases(suite, f)
    return {c.get("name", ""): c for c in suite.iter("testcase")}


def test_every_replica_compared_on_every_path_is_identical():
    store = started({A: {}, B: {}, C: {}})
    for u in (A, B, C):
        ran(store, u)
    f = done(store)
    assert f.identical is True and failure_line(f) is None and f.not_fully_compared == {}
    assert f.grouped_on == HELPERS
    assert [list(g.replicas) for g in f.groups] == [[A, B, C]] and f.odd == ()
    cases = junit_cases(f)
    assert not list(cases["identical"])  # the fleet case passes
    assert all(not list(cases[f"replica[{u}]"]) for u in (A, B, C))


def test_a_replica_that_died_after_match_makes_identical_inconclusive():
    store = started({A: {}, B: {}, C: {}})
    ran(store, A)
    ran(store, B)
    died_after_match(store, C)
    f = done(store)
    assert f.identical is None
    assert [list(g.replicas) for g in f.groups] == [[A, B]]  # C does not vote
    why = f.not_fully_compared[C]
    assert why.kind == AsideKind.SHORT
    assert {h: s.kind for h, s in why.short} == {
        "prefill_cache_hit": ShortKind.ERRORED,
        "decode_cache_hit": ShortKind.AFTER_ERROR,
    }
    # the gate fails as inconclusive (one group, no difference): C is not compared everywhere
    assert f.failed and len(f.groups) == 1 and list(f.not_fully_compared) == [C]
    assert f"{C} ({aside_words(why)})" in (failure_line(f) or "")
    cases = junit_cases(f)
    (failed,) = cases["identical"].findall("failure")  # the fleet case fails, and says why
    assert failed.get("message") == failure_line(f)
    (skipped,) = cases[f"replica[{C}]"].findall("skipped")
    assert aside_words(why) in skipped.get("message", "")  # the junit case says the words


def test_a_cache_path_that_scored_1_of_8_samples_is_no_comparison():
    store = started({A: {}, B: {}})
    ran(store, A)
    ran(store, B, decode_cache_hit=tuple(range(1, N)))  # SGLANG_TEST_SKIP_CACHE_HIT_ASSERT=1
    f = done(store)
    cell = f.matrices["decode_cache_hit"][0][1]
    assert cell is not None and cell.identical is True and cell.comparable_samples == 1
    assert cell.counted is False
    assert f.identical is None
    assert f.grouped_on == ("match", "prefill_cache_hit")
    few = Shortfall(ShortKind.NOT_TESTED, untested=Untested(NotTested.FEW_SCORED, 1, 8, need=4))
    assert f.not_fully_compared[B] == Aside(AsideKind.SHORT, short=(("decode_cache_hit", few),))
    assert replica_cells(f)[B]["decode_cache_hit"] == "not compared"
    assert f.failed and B in f.not_fully_compared
    assert set(f.not_fully_compared) == {B} and f.uncompared == {}  # inconclusive: B is short
    # the summary names B as not fully compared on decode_cache_hit, and the groups as
    # compared on match and prefill_cache_hit only, not on every path (test_golden_fleet.py)
    assert f.grouped_on != f.helpers and "decode_cache_hit" not in f.grouped_on
    html = fleet_html(f)
    dch = html[html.index("<h3>decode_cache_hit: replicas x replicas</h3>") :]
    assert "<td>=</td>" not in dch and "<td title='1 common samples" in dch
    match = f.matrices["match"]
    assert match[0][1] is not None and match[0][1].counted and match[0][1].identical


def test_null_cache_path_matrices_are_not_identical():
    store = started({A: {}, B: {}, C: {}})
    for u in (A, B, C):  # radix cache off: prefill_cache_hit compares nothing anywhere
        for k, h in enumerate(HELPERS):
            if h == "prefill_cache_hit":
                vacuous(store, u, h)
                continue
            for ev in helper_events(h, u, k):
                store.apply(ev)
    f = done(store)
    assert all(c is None for row in f.matrices["prefill_cache_hit"] for c in row)
    assert f.identical is None and f.grouped_on == ("match", "decode_cache_hit")
    assert set(f.not_fully_compared) == {A, B, C}
    vacuous_a = f.not_fully_compared[A]
    assert vacuous_a.kind == AsideKind.SHORT and len(vacuous_a.short) == 1
    ((h, short),) = vacuous_a.short
    assert h == "prefill_cache_hit" and short.untested is not None
    assert (short.untested.kind, short.untested.status) == (NotTested.UNUSABLE, "vacuous")
    assert f.failed and f.odd == ()  # inconclusive, not a difference: nothing compared fully
    assert [list(g.replicas) for g in f.groups] == [[A, B, C]]  # one group, on those two


def test_a_partially_compared_replica_neither_bridges_groups_nor_votes():
    # B and A differ on decode_cache_hit only; C died after match, where it equals both
    store = started({B: {}, A: {}, C: {}}, require="gate")
    ran(store, B, seeds={"decode_cache_hit": 100})
    ran(store, A)
    died_after_match(store, C)
    f = done(store)
    assert sorted(list(g.replicas) for g in f.groups) == [[A], [B]]
    assert C not in f.group_of() and C in f.not_fully_compared
    assert f.identical is False  # A and B differ, on a path both compared fully
    (o,) = f.odd
    assert not o.majority  # 1 against 1: neither is "the odd one out"
    assert list(f.not_fully_compared) == [C]  # the summary names it, "not fully compared"


def test_replicas_that_share_too_few_samples_on_a_path_are_not_grouped_on_it():
    # A and B scored disjoint halves of decode_cache_hit: each tested its path (4 of 8), but
    # they share no sample there, so A-B is no evidence; C scored all and equals both
    store = started({A: {}, B: {}, C: {}}, require="gate")
    ran(store, A, decode_cache_hit=(4, 5, 6, 7))
    ran(store, B, decode_cache_hit=(0, 1, 2, 3))
    ran(store, C)
    f = done(store)
    ia, ib = f.replicas.index(A), f.replicas.index(B)
    cell = f.matrices["decode_cache_hit"][ia][ib]
    assert cell is not None and cell.identical is None and cell.counted is False
    assert [list(g.replicas) for g in f.groups] == [[A, C]]  # transitive: B is set aside
    assert f.not_fully_compared[B] == Aside(
        AsideKind.TOO_FEW, helper="decode_cache_hit", common=0, need=4, other=A
    )
    assert f.identical is None and f.odd == ()


def test_a_replica_equal_to_two_groups_on_fewer_samples_bridges_neither():
    # A and B differ on sample 7 of decode_cache_hit only; C skipped that sample (7 of 8
    # scored, enough to count) and so equals both: it must not join either and vote
    store = started({A: {}, B: {}, C: {}}, require="gate")
    ran(store, A)
    ran(store, B, changed={"decode_cache_hit": (7,)})
    ran(store, C, decode_cache_hit=(7,))
    f = done(store)
    assert [list(g.replicas) for g in f.groups] == [[A], [B]]
    assert f.not_fully_compared == {C: Aside(AsideKind.BOTH, other=A, third=B)}
    (o,) = f.odd
    assert o.replica == B and not o.majority  # neither is "the odd one out"
    assert f.identical is False


def test_no_reported_setting_explains_a_split_that_no_setting_follows():
    # page size varies inside the first group: it cannot be what sets the groups apart
    servers = {A: {"page_size": 1}, B: {"page_size": 4}, C: {"page_size": 4}}
    store = started(servers, require="gate")
    ran(store, A)
    ran(store, B)
    ran(store, C, seeds={"match": 100})
    f = done(store)
    assert f.settings_differ == {} and len(f.groups) == 2  # a split, and no setting follows it
    (o,) = f.odd
    assert (o.replica, o.settings) == (C, {})  # its junit failure names no setting
    assert junit_cases(f)[f"replica[{C}]"].findall("failure")


def test_a_setting_some_replicas_do_not_report_separates_nothing():
    servers = {A: {"page_size": None}, B: {"page_size": None}, C: {"page_size": 4}}
    store = started(servers, require="gate")
    ran(store, A)
    ran(store, B)
    ran(store, C, seeds={"match": 100})
    f = done(store)
    assert "page_size" not in f.settings_differ
    assert f.settings_differ == {} and len(f.groups) == 2


def test_a_setting_that_separates_groups_of_one_replica_only_coincides():
    # a jittering proxy in front of the page-4 replica: the page size is not the cause
    store = started({A: {"page_size": 1}, B: {"page_size": 4}}, require="gate")
    ran(store, A)
    ran(store, B, seeds={"match": 100})
    f = done(store)
    assert f.settings_differ == {"page_size": [1, 4]}
    assert [len(g.replicas) for g in f.groups] == [1, 1]  # so the setting only coincides


def test_a_setting_constant_within_groups_of_several_replicas_is_named():
    servers = {
        A: {"enable_deterministic_inference": True, "page_size": 1},
        B: {"enable_deterministic_inference": True, "page_size": 4},
        C: {"enable_deterministic_inference": False, "page_size": 1},
        D: {"enable_deterministic_inference": False, "page_size": 4},
    }
    store = started(servers, require="gate")
    ran(store, A)
    ran(store, B)
    ran(store, C, seeds={"match": 100})
    ran(store, D, seeds={"match": 100})
    f = done(store)
    assert f.settings_differ == {"enable_deterministic_inference": [True, False]}
    assert [len(g.replicas) for g in f.groups] == [2, 2]  # named: not one replica per group


def test_one_replica_is_compared_with_nothing():
    store = started({A: {}})
    ran(store, A)
    f = done(store)
    assert f.identical is None and f.grouped_on == ()
    assert f.replicas == (A,) and f.uncompared == {} and f.not_fully_compared == {}
