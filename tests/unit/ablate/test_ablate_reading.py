"""kltui ablate's reading (issue 29): every verdict from synthetic stores built from events,
and both traps (a flag that changed nothing, a knob that only turns a helper off) named and
never counted as fixes."""

from __future__ import annotations

import json

import numpy as np

from kltui.ablate.knobs import parse_vary
from kltui.ablate.plan import Config, attach, pairs, plan
from kltui.metrics.k3 import ScoreBook
from kltui.readings.ablation import (
    INCONCLUSIVE,
    LOCALIZED,
    NO_SINGLE,
    NOT_REPRODUCED,
    NOT_TESTED,
    REDUCED,
    REMOVED,
    REMOVED_ON,
    SAME,
    read,
)
from kltui.readings.ablation import (
    INCONCLUSIVE_KIND as INCONCLUSIVE_V,
)
from kltui.readings.ablation_kinds import Missing, Shape, Step, Trap, VerdictKind, Why
from kltui.readings.coverage import NotTested, Untested
from kltui.readings.identity import CheckBasis, ConflictKind
from kltui.session.events import HelperFinished, HelperStarted, RunStarted, SampleScored
from kltui.session.store import SessionStore
from kltui.words.ablation import (
    lines,
    next_step,
    notes,
    trap_lines,
    verdict_line,
)
from kltui.words.ablation_config import (
    config_line,
    helper_line,
    no_effect_line,
    trap_line,
    turned_off_lines,
)
from kltui.words.ablation_json import ablation_json, config_json

HELPERS = ("match", "prefill_cache_hit", "decode_cache_hit")
LAUNCH = "python -m sglang.launch_server --model-path M --attention-backend triton".split()
INFO = {
    "attention_backend": "triton",
    "disable_cuda_graph": False,
    "disable_radix_cache": False,
    "enable_deterministic_inference": False,
    "page_size": 1,
}


def rows_at(rng, levels, length: int = 16):
    """(lp_a, lp_b) per sample whose mean k3 is about `level` (0: bit-identical)."""
    out = []
    for lv in levels:
        b = -1 - rng.random(length) * 4
        d = np.sqrt(2 * lv) * (1 + 0.2 * rng.standard_normal(length)) if lv else 0.0
        out.append((b - d, b))  # below b: a logprob stays <= 0
    return out


def store(
    url: str, info: dict, helpers: dict, cached: dict | None = None, threshold: float = 1e-3
) -> SessionStore:
    """A finished run on one server: helper -> rows, or "vacuous" (radix cache off); `cached`:
    helper -> each sample's cached_tokens (default 5); `threshold`: every helper's gate."""
    st = SessionStore()
    server = {"url": url, "engine": "sglang", **info}
    st.apply(RunStarted("r", 0.0, {"max_new_tokens": 16, "temperature": 0.0}, [server], {}, "0"))
    for helper, rows in helpers.items():
        n = 32 if isinstance(rows, str) else len(rows)
        st.apply(HelperStarted(helper, url, n, threshold, 1e-3))
        if rows == "vacuous":
            st.apply(
                HelperFinished(
                    helper,
                    url,
                    {
                        "status": "vacuous",
                        "scored": 0,
                        "reason": "the server runs with "
                        "disable_radix_cache=true: no cache hit is possible",
                    },
                )
            )
            continue
        book = ScoreBook()
        hits = (cached or {}).get(helper) or [5] * len(rows)
        for i, (a, b) in enumerate(rows):
            ids = np.arange(a.size)
            book.add(i, ids, a, b, hits[i], 30)
            st.apply(SampleScored(helper, url, i, ids, a, b, hits[i], 30))
        summary = book.summary(n_samples=len(rows), n_skipped=0, threshold=threshold)
        summary["status"] = "pass" if summary["passed"] else "fail"
        st.apply(HelperFinished(helper, url, summary))
    return st


def noisy(seed: int, level: float = 5e-3, n: int = 32, helpers=HELPERS) -> dict:
    rng = np.random.default_rng(seed)
    return {h: rows_at(rng, [level] * n) for h in helpers}


def sweep(*specs: str):
    return plan(LAUNCH, [parse_vary(s) for s in specs])


def url(i: int) -> str:
    return f"http://127.0.0.1:{30000 + i}"


def text(ab) -> str:
    return json.dumps(ablation_json(ab)) + "\n".join(lines(ab))


# --------------------------------------------------------------------------- verdicts
def test_not_reproduced_when_the_base_passes_at_the_floor():
    p = sweep("attention-backend=fa3")
    stores = {
        "base": store(url(0), INFO, noisy(0, 0.0)),
        # at the floor too (a knob above it introduces a divergence: test_ablate_introduced)
        "attention-backend=fa3": store(
            url(1), INFO | {"attention_backend": "fa3"}, noisy(1, 1e-12)
        ),
    }
    ab = read(p, stores)
    assert ab.verdict.kind == NOT_REPRODUCED and ab.verdict.helpers == ()
    assert [(h.helper, h.level) for h in ab.tested] == [(h, 0.0) for h in HELPERS]
    assert ab.verdict.step is None and ab.diverging == () and ab.verdict.introduced == ()


def test_localized_lists_every_knob_sufficient_on_its_own():
    p = sweep("attention-backend=fa3", "deterministic=on", "cuda-graph=off")
    stores = {
        "base": store(url(0), INFO, noisy(0)),
        "attention-backend=fa3": store(url(1), INFO | {"attention_backend": "fa3"}, noisy(1, 0.0)),
        "deterministic=on": store(
            url(2), INFO | {"enable_deterministic_inference": True}, noisy(2, 0.0)
        ),
        "cuda-graph=off": store(url(3), INFO | {"disable_cuda_graph": True}, noisy(3)),
    }
    ab = read(p, stores)
    assert ab.verdict.kind == LOCALIZED, verdict_line(ab)
    match = ab.verdict.helpers[0]
    assert match.helper == "match"
    assert match.sufficient == ("attention-backend=fa3", "deterministic=on")
    assert match.shape == Shape.REMOVED
    assert [(n, r.level, r.exact_samples, r.scored) for n, r in match.found] == [
        ("attention-backend=fa3", 0.0, 32, 32),
        ("deterministic=on", 0.0, 32, 32),
    ]
    fa3 = next(c for c in ab.configs if c.config.name == "attention-backend=fa3")
    r = fa3.helper("match")
    assert r is not None and r.effect == REMOVED and r.exact_samples == 32
    assert r.lower is not None and r.lower.beyond_chance and r.identical_to_base == 0
    assert fa3.took_effect is True and fa3.condition == 0
    # the base's divergence is condition 1 (every helper noisy): the dumper chain applies
    assert ab.base.condition == 1 and ab.verdict.chain
    assert ab.verdict.step == Step.CHAIN
    cg = next(c for c in ab.configs if c.config.name == "cuda-graph=off")
    assert trap_line(cg) is None and cg.helper("match").effect not in (REMOVED, REDUCED)  # type: ignore[union-attr]


def test_one_knob_removing_it_reads_as_the_issue_says():
    p = sweep("attention-backend=fa3")
    ab = read(
        p,
        {
            "base": store(url(0), INFO, noisy(0, 8.5e-3)),
            "attention-backend=fa3": store(
                url(1), INFO | {"attention_backend": "fa3"}, noisy(1, 0.0)
            ),
        },
    )
    assert ab.verdict.kind == LOCALIZED
    hv = ab.verdict.helpers[0]
    assert hv.helper == "match" and hv.shape == Shape.REMOVED
    ((name, r),) = hv.found
    assert name == "attention-backend=fa3" and r.effect == REMOVED
    assert r.level == 0.0 and 8e-3 < (r.base_level or 0) < 9e-3
    assert (r.exact_samples, r.scored) == (32, 32)


def test_reduced_at_least_tenfold_beyond_chance_but_not_at_the_floor():
    p = sweep("attention-backend=fa3")
    ab = read(
        p,
        {
            "base": store(url(0), INFO, noisy(0, 5e-3)),
            "attention-backend=fa3": store(
                url(1), INFO | {"attention_backend": "fa3"}, noisy(1, 2e-4)
            ),
        },
    )
    assert ab.verdict.kind is VerdictKind.REDUCED, verdict_line(ab)
    hv = ab.verdict.helpers[0]
    assert hv.reducing == ("attention-backend=fa3",) and hv.sufficient == ()
    assert hv.shape == Shape.REDUCED and [n for n, _ in hv.found] == ["attention-backend=fa3"]
    r = ab.configs[0].helper("match")
    assert r is not None and r.effect == REDUCED and 0 < (r.change or 0) < 0.1


def test_no_single_knob_then_pairs_localize_it_together():
    p = sweep("cuda-graph=off", "deterministic=on", "tp=2")
    stores = {
        "base": store(url(0), INFO, noisy(0)),
        "cuda-graph=off": store(url(1), INFO | {"disable_cuda_graph": True}, noisy(1)),
        "deterministic=on": store(
            url(2), INFO | {"enable_deterministic_inference": True}, noisy(2, 3e-3)
        ),
        "tp=2": store(url(3), INFO | {"tp_size": 2}, noisy(3, 6e-3)),
    }
    ab = read(p, stores)
    assert ab.verdict.kind == NO_SINGLE, verdict_line(ab)
    assert [(hv.helper, hv.shape) for hv in ab.verdict.helpers] == [
        (h, Shape.NO_SINGLE) for h in HELPERS
    ]
    assert ab.verdict.helpers[0].tried == ("cuda-graph=off", "deterministic=on", "tp=2")
    assert ab.verdict.helpers[0].combos == ()
    assert ab.verdict.step == Step.PAIRS
    moved = ab.movement()
    assert set(moved) == {"cuda-graph=off", "deterministic=on", "tp=2"}
    assert max(moved, key=moved.__getitem__) == "deterministic=on"
    (pair,) = pairs(p, moved)
    assert pair.name == "cuda-graph=off+deterministic=on"
    stores[pair.name] = store(
        url(4),
        INFO | {"disable_cuda_graph": True, "enable_deterministic_inference": True},
        noisy(4, 0.0),
    )
    ab2 = read([*p.configs, pair], stores)
    assert ab2.verdict.kind == LOCALIZED
    hv = ab2.verdict.helpers[0]
    assert hv.helper == "match" and hv.shape == Shape.TOGETHER and hv.sufficient == (pair.name,)


def test_no_single_knob_after_pairs_points_elsewhere():
    p = sweep("cuda-graph=off", "deterministic=on")
    pair = p.combined({"cuda-graph": "off", "deterministic": "on"})
    both = INFO | {"disable_cuda_graph": True, "enable_deterministic_inference": True}
    stores = {
        "base": store(url(0), INFO, noisy(0)),
        "cuda-graph=off": store(url(1), INFO | {"disable_cuda_graph": True}, noisy(1)),
        "deterministic=on": store(
            url(2), INFO | {"enable_deterministic_inference": True}, noisy(2)
        ),
        pair.name: store(url(3), both, noisy(3)),
    }
    ab = read([*p.configs, pair], stores)
    assert ab.verdict.kind == NO_SINGLE
    assert ab.verdict.helpers[0].combos == (pair.name,)
    assert ab.verdict.step == Step.VARY_OTHER


def test_inconclusive_when_n_is_too_small():
    p = sweep("attention-backend=fa3")
    ab = read(
        p,
        {
            "base": store(url(0), INFO, noisy(0, n=8)),
            "attention-backend=fa3": store(
                url(1), INFO | {"attention_backend": "fa3"}, noisy(1, 0.0, n=8)
            ),
        },
    )
    assert ab.verdict.kind is INCONCLUSIVE_V, verdict_line(ab)
    r = ab.configs[0].helper("match")
    assert r is not None and r.effect == INCONCLUSIVE and r.why == Why.TOO_FEW
    assert r.lower is not None and r.lower.n == 8
    assert ab.verdict.step == Step.MORE_SAMPLES
    assert all(hv.kind == INCONCLUSIVE_V and hv.too_few for hv in ab.verdict.helpers)


def test_inconclusive_when_a_tenfold_drop_is_inside_the_noise():
    """One sample carries the base's level; the configuration is higher on every other one."""
    rng = np.random.default_rng(5)
    base_levels = [1e-6] * 15 + [1.0]
    cfg_levels = [1e-5] * 15 + [1e-3]
    p = sweep("attention-backend=fa3")
    ab = read(
        p,
        {
            "base": store(url(0), INFO, {"match": rows_at(rng, base_levels)}),
            "attention-backend=fa3": store(
                url(1), INFO | {"attention_backend": "fa3"}, {"match": rows_at(rng, cfg_levels)}
            ),
        },
    )
    r = ab.configs[0].helper("match")
    assert r is not None and (r.change or 1) < 0.1
    assert r.effect == INCONCLUSIVE and r.why == Why.NOISE, helper_line(r)
    assert ab.verdict.kind is INCONCLUSIVE_V


def test_a_knob_that_brings_three_samples_to_rounding_is_localized_on_them():
    """Issue 43: decode_cache_hit at 4.9e-4 on 3 of 32 samples where match reads 7.3e-13, the
    rest rounding noise (~1e-12) on every path; the knob brings the three to ~1e-12 and leaves
    the rest where they were. A test over all 32 samples sees 3 of 32 (signed-rank p=0.12,
    "inside the noise"); each of the three is evidence on its own: localized on those."""
    rng = np.random.default_rng(43)
    hit = (4, 11, 23)
    rest = [1e-12] * 32

    def helpers(decode: list[float]) -> dict:
        match = [7.3e-13 if i in hit else 1e-12 for i in range(32)]
        return {
            "match": rows_at(rng, match),
            "prefill_cache_hit": rows_at(rng, rest),
            "decode_cache_hit": rows_at(rng, decode),
        }

    base = [4.9e-4 if i in hit else 1e-12 for i in range(32)]
    p = sweep("attention-backend=fa3")
    ab = read(
        p,
        {
            "base": store(url(0), INFO, helpers(base)),
            "attention-backend=fa3": store(
                url(1), INFO | {"attention_backend": "fa3"}, helpers(rest)
            ),
        },
    )
    assert ab.diverging == ("decode_cache_hit",)
    r = ab.configs[0].helper("decode_cache_hit")
    assert r is not None and r.effect == REMOVED_ON and r.samples == hit, helper_line(r)
    assert r.lower is not None and not r.lower.beyond_chance  # what a test over all says
    assert ab.verdict.kind == LOCALIZED, verdict_line(ab)
    (hv,) = ab.verdict.helpers
    assert hv.samples == hit and hv.sufficient == ("attention-backend=fa3",)
    assert hv.shape == Shape.ON_SAMPLES, verdict_line(ab)
    doc = ablation_json(ab)
    assert doc["verdict"]["helpers"][0]["samples"] == list(hit)
    assert doc["configs"][1]["helpers"]["decode_cache_hit"]["samples"] == list(hit)
    assert not ab.verdict.chain  # a state bug on samples, not the kernels: no dumper chain


def test_samples_far_above_are_not_localized_when_the_knob_leaves_others_above_rounding():
    """The same three samples, but the knob leaves a fourth far above rounding: not at
    rounding level everywhere, so nothing is localized on samples."""
    rng = np.random.default_rng(44)
    hit = (4, 11, 23)
    base = [4.9e-4 if i in hit else 1e-12 for i in range(32)]
    cfg = [1e-12] * 32
    cfg[30] = 4.9e-4
    p = sweep("attention-backend=fa3")
    ab = read(
        p,
        {
            "base": store(url(0), INFO, {"decode_cache_hit": rows_at(rng, base)}),
            "attention-backend=fa3": store(
                url(1), INFO | {"attention_backend": "fa3"}, {"decode_cache_hit": rows_at(rng, cfg)}
            ),
        },
    )
    r = ab.configs[0].helper("decode_cache_hit")
    assert r is not None and r.effect != REMOVED_ON and r.samples == (), helper_line(r)
    assert ab.verdict.kind != LOCALIZED


# --------------------------------------------------------------------------- traps
def test_a_flag_whose_server_info_reports_the_bases_value_is_never_a_fix():
    """The flag is accepted and ignored: /server_info reports triton, the result is exact
    by accident (or by another cause): 'did not take effect', not localized."""
    p = sweep("attention-backend=fa3")
    ab = read(
        p,
        {
            "base": store(url(0), INFO, noisy(0)),
            "attention-backend=fa3": store(url(1), INFO, noisy(1, 0.0)),
        },
    )
    (cfg,) = ab.configs
    assert cfg.took_effect is False and cfg.trap == Trap.NOT_TAKEN
    bad = cfg.not_taken
    assert bad is not None and (bad.key, bad.raw, bad.base, bad.asked) == (
        "attention_backend",
        "triton",
        "triton",
        "fa3",
    )
    assert ab.verdict.kind != LOCALIZED and trap_line(cfg) in trap_lines(ab)
    assert "attention-backend=fa3" not in ab.movement()


def test_a_flag_that_changed_no_bit_is_named():
    p = sweep("cuda-graph=off")
    base = noisy(0)
    ab = read(
        p,
        {
            "base": store(url(0), INFO, base),
            "cuda-graph=off": store(url(1), INFO | {"disable_cuda_graph": True}, base),
        },
    )
    (cfg,) = ab.configs
    assert cfg.identical_to_base is True and cfg.took_effect is True
    assert all(h.effect == SAME for h in cfg.helpers)
    # /server_info confirms the flag: no bit changed is a measured "not this setting" (on the
    # H200, CUDA graph replay runs the same kernels), never "the flag did not take effect"
    assert cfg.trap is None and cfg.no_effect and cfg.confirmed
    assert [(s.key, s.raw, s.base_raw) for s in cfg.settings] == [
        ("disable_cuda_graph", True, False)
    ]
    assert [(h.identical_to_base, h.common) for h in cfg.helpers] == [(32, 32)] * 3
    assert ab.no_effect == (cfg,)
    assert no_effect_line(cfg) in notes(ab) and no_effect_line(cfg) in lines(ab)
    assert not trap_lines(ab)
    # a knob tried that explains nothing
    assert ab.verdict.kind != LOCALIZED, verdict_line(ab)
    assert all(hv.shape == Shape.NO_SINGLE for hv in ab.verdict.helpers), verdict_line(ab)
    assert all(hv.tried == ("cuda-graph=off",) for hv in ab.verdict.helpers)


def test_a_flag_that_changed_no_bit_unconfirmed_is_a_trap():
    p = sweep("cuda-graph=off")
    base = noisy(0)
    silent = {k: v for k, v in INFO.items() if k != "disable_cuda_graph"}
    ab = read(p, {"base": store(url(0), INFO, base), "cuda-graph=off": store(url(1), silent, base)})
    (cfg,) = ab.configs
    assert cfg.identical_to_base is True and cfg.took_effect is None
    assert not cfg.no_effect and cfg.trap == Trap.CHANGED_NOTHING
    assert [(h.identical_to_base, h.common) for h in cfg.helpers] == [(32, 32)] * 3
    assert [(s.key, s.reported) for s in cfg.settings] == [("disable_cuda_graph", None)]
    assert trap_lines(ab) == [trap_line(cfg)]
    # the only knob might not have taken effect: nothing but the base counts, nothing claimed
    assert ab.verdict.kind == INCONCLUSIVE_V, verdict_line(ab)
    assert all(hv.shape == Shape.ALONE for hv in ab.verdict.helpers)
    assert all((hv.trapped, hv.missing) == (("cuda-graph=off",), ()) for hv in ab.verdict.helpers)
    assert ab.verdict.step == Step.ALONE


def test_radix_cache_off_makes_the_cache_helpers_not_tested_never_fixed():
    """A planted cache fault on a deterministic base: match exact, decode_cache_hit diverges;
    radix-cache=off leaves both cache helpers vacuous."""
    rng = np.random.default_rng(7)
    det = INFO | {"enable_deterministic_inference": True}
    base = {
        "match": rows_at(rng, [0.0] * 32),
        "prefill_cache_hit": rows_at(rng, [0.0] * 32),
        "decode_cache_hit": rows_at(rng, [0.5] * 32),
    }
    off = {
        "match": rows_at(rng, [0.0] * 32),
        "prefill_cache_hit": "vacuous",
        "decode_cache_hit": "vacuous",
    }
    p = plan([*LAUNCH, "--enable-deterministic-inference"], [parse_vary("radix-cache=off")])
    ab = read(
        p,
        {
            "base": store(url(0), det, base),
            "radix-cache=off": store(url(1), det | {"disable_radix_cache": True}, off),
        },
    )
    assert ab.base.condition == 2 and ab.diverging == ("decode_cache_hit",)
    (cfg,) = ab.configs
    r = cfg.helper("decode_cache_hit")
    assert r is not None and r.effect == NOT_TESTED and r.untested is not None
    assert cfg.trap is None and cfg.took_effect is True
    off = cfg.turned_off()
    assert [h.helper for h in off] == ["prefill_cache_hit", "decode_cache_hit"]
    lines = turned_off_lines(cfg)
    assert len(lines) == 2 and all(line in trap_lines(ab) for line in lines)
    # issue 44: the knob itself turned the cache off, and the reading blames it (its words
    # name it, not deterministic inference, which the helper's own words guess at)
    blamed = [h.blamed for h in off]
    assert all(
        b is not None
        and (b.knob, b.asked, b.key, b.raw, b.base_raw)
        == ("radix-cache", "off", "disable_radix_cache", True, False)
        for b in blamed
    ), blamed
    assert "deterministic" not in " ".join(lines)
    assert ab.verdict.kind is INCONCLUSIVE_V and ab.verdict.helpers[0].sufficient == ()
    assert ab.verdict.helpers[0].shape == Shape.BLIND
    assert ab.verdict.helpers[0].untested_by == ("radix-cache=off",)
    assert ab.verdict.step == Step.BLIND
    assert (ab.verdict.step_helpers, ab.verdict.step_configs) == (
        ("decode_cache_hit",),
        ("radix-cache=off",),
    )
    out = text(ab)
    assert "fixed" not in out and "removes" not in out
    assert "radix-cache=off" not in ab.movement()


# --------------------------------------------------------------------------- the rest
def test_a_configuration_that_did_not_run_is_kept_and_named():
    p = sweep("attention-backend=fa3", "cuda-graph=off")
    ab = read(
        p,
        {
            "base": store(url(0), INFO, noisy(0)),
            "cuda-graph=off": store(url(2), INFO | {"disable_cuda_graph": True}, noisy(2, 0.0)),
        },
    )
    fa3 = next(c for c in ab.configs if c.config.name == "attention-backend=fa3")
    assert not fa3.measured and fa3.missing is Missing.NOT_RUN  # "did not run"
    assert ab.verdict.kind == LOCALIZED and ab.verdict.helpers[0].sufficient == ("cuda-graph=off",)
    nothing = read(p, {})
    assert nothing.verdict.kind == INCONCLUSIVE_V and nothing.verdict.helpers == ()
    assert not nothing.base.measured and nothing.base.missing == Missing.BASE_NOT_RUN
    assert {c.missing for c in nothing.configs} == {Missing.NOT_READ}


def test_attach_mode_configurations_read_the_same_way():
    fa3_info = INFO | {"attention_backend": "fa3"}
    cfgs = attach(url(0), INFO, [(url(1), fa3_info)])
    ab = read(
        cfgs,
        {
            "base": store(url(0), INFO, noisy(0)),
            "attention-backend=fa3": store(url(1), fa3_info, noisy(1, 0.0)),
        },
    )
    assert ab.verdict.kind == LOCALIZED and ab.verdict.helpers[0].sufficient == (
        "attention-backend=fa3",
    )
    assert ab.configs[0].took_effect is True


def test_a_sweep_read_back_refuses_what_check_refuses():
    """A folder read back (or servers attached to) whose configuration is another model, or
    the base's own server under a second URL: refused, not counted, both named."""
    weights = {"model_path": "/m/checkpoint", "local_weights_sha256": "a" * 64}
    other = {"model_path": "/n/checkpoint", "local_weights_sha256": "b" * 64}
    fa3_info = INFO | {"attention_backend": "fa3"}
    cfgs = attach(url(0), INFO, [(url(1), fa3_info)])
    ab = read(
        cfgs,
        {
            "base": store(url(0), INFO | weights, noisy(0)),
            "attention-backend=fa3": store(url(1), fa3_info | other, noisy(1, 0.0)),
        },
    )
    (cfg,) = ab.configs
    assert not cfg.measured and cfg.missing == Missing.REFUSED and cfg.refused is not None
    assert (cfg.refused.kind, cfg.refused.a, cfg.refused.b) == (
        ConflictKind.DIFFERENT_MODEL,
        url(0),
        url(1),
    )
    check = cfg.refused.check
    assert check is not None and check.basis == CheckBasis.LOCAL_HASH
    assert (check.a, check.b) == ("a" * 64, "b" * 64)
    assert ab.verdict.kind != LOCALIZED and ab.verdict.helpers[0].sufficient == ()
    one = {"startup_time": 12.5, "port": 30000}
    ab = read(
        cfgs,
        {
            "base": store(url(0), INFO | one, noisy(0)),
            "attention-backend=fa3": store(url(1), INFO | one, noisy(1)),
        },
    )
    (cfg,) = ab.configs
    assert cfg.missing == Missing.REFUSED and cfg.refused is not None
    assert (cfg.refused.kind, cfg.refused.a, cfg.refused.b) == (
        ConflictKind.SAME_PROCESS,
        url(0),
        url(1),
    )
    assert config_json(cfg, ["match"])["counted"] is False


def test_a_knob_that_starves_the_cache_is_not_tested_never_reduced():
    """The base hit 20-70 cached tokens, the configuration 1 on 15 of 16 prompts: it scored,
    but restored too little to test the path: "not tested", whatever its k3."""
    rng = np.random.default_rng(3)
    det = INFO | {"enable_deterministic_inference": True}
    base = {"match": rows_at(rng, [0.0] * 16), "prefill_cache_hit": rows_at(rng, [0.3] * 16)}
    low = {"match": rows_at(rng, [0.0] * 16), "prefill_cache_hit": rows_at(rng, [6e-3] * 16)}
    hits = [int(h) for h in np.linspace(20, 70, 16)]
    p = plan([*LAUNCH, "--enable-deterministic-inference"], [parse_vary("--max-total-tokens=80")])
    ab = read(
        p,
        {
            "base": store(url(0), det, base, {"prefill_cache_hit": hits}),
            "--max-total-tokens=80": store(
                url(1), det, low, {"prefill_cache_hit": [1] * 15 + [40]}
            ),
        },
    )
    (cfg,) = ab.configs
    r = cfg.helper("prefill_cache_hit")
    assert r is not None and r.effect == NOT_TESTED, helper_line(r)
    assert r.untested == Untested(
        NotTested.STARVED, 16, 16, short=15, cached=(1, 1), base_cached=(20, 66)
    )
    assert ab.verdict.kind is INCONCLUSIVE_V and ab.verdict.helpers[0].reducing == ()
    # the same hits as the base's are a test: the drop is read as before
    ab = read(
        p,
        {
            "base": store(url(0), det, base, {"prefill_cache_hit": hits}),
            "--max-total-tokens=80": store(url(1), det, low, {"prefill_cache_hit": hits}),
        },
    )
    r = ab.configs[0].helper("prefill_cache_hit")
    assert r is not None and r.effect is REDUCED


def test_json_document_and_console_lines():
    p = sweep("attention-backend=fa3")
    ab = read(
        p,
        {
            "base": store(url(0), INFO, noisy(0)),
            "attention-backend=fa3": store(
                url(1), INFO | {"attention_backend": "fa3"}, noisy(1, 0.0)
            ),
        },
    )
    doc = json.loads(json.dumps(ablation_json(ab), allow_nan=False))
    assert doc["base"] == "base" and doc["verdict"]["kind"] == "localized"
    base, fa3 = doc["configs"]
    assert base["name"] == "base" and base["helpers"]["match"]["effect"] == "base"
    assert fa3["changes"] == {"attention-backend": "fa3"} and fa3["took_effect"] is True
    assert fa3["settings"] == {
        "attention_backend": {"base": "triton", "reported": "fa3", "asked": "fa3"}
    }
    m = fa3["helpers"]["match"]
    assert m["effect"] == "removed" and m["avg_kl_div"] == 0.0 and m["exact_samples"] == 32
    assert m["paired"]["n"] == 32 and m["paired"]["p"] < 2.5e-4
    assert fa3["movement"] > 5
    (fa3_reading,) = ab.configs
    r = fa3_reading.helper("match")
    assert r is not None and r.effect is REMOVED and r.level == 0.0
    assert ab.verdict.kind is VerdictKind.LOCALIZED and ab.verdict.step is Step.CHAIN
    # the console's lines are the words' of each part (their goldens: tests/unit/words)
    said = lines(ab)
    assert all("\n" not in line for line in said)
    assert said == [
        config_line(ab.base),
        config_line(fa3_reading),
        verdict_line(ab),
        f"next: {next_step(ab.verdict)}",
    ]


def test_configs_given_as_a_list_need_a_base():
    only = Config("base", {}, tuple(LAUNCH))
    ab = read([only], {"base": store(url(0), INFO, noisy(0))})
    assert ab.configs == () and ab.verdict.kind == INCONCLUSIVE_V
    assert all(hv.shape == Shape.ALONE for hv in ab.verdict.helpers)
    assert all(hv.missing == hv.trapped == () for hv in ab.verdict.helpers)


def test_a_knob_removing_every_helpers_divergence_says_localized_once():
    p = sweep("attention-backend=fa3", "deterministic=on")
    ab = read(
        p,
        {
            "base": store(url(0), INFO, noisy(0)),
            "attention-backend=fa3": store(
                url(1), INFO | {"attention_backend": "fa3"}, noisy(1, 0.0)
            ),
            # accepted and ignored: exact by accident, and shown without its effect
            "deterministic=on": store(url(2), INFO, noisy(2, 0.0)),
        },
    )
    assert verdict_line(ab).count("localized:") == 1
    assert [(hv.helper, hv.kind, hv.shape) for hv in ab.verdict.helpers] == [
        (h, LOCALIZED, Shape.REMOVED) for h in HELPERS
    ]
    det = next(c for c in ab.configs if c.config.name == "deterministic=on")
    assert trap_line(det) is not None and "(removed)" not in config_line(det)
    assert config_json(det, ab.diverging)["counted"] is False
    assert all(hv.sufficient == ("attention-backend=fa3",) for hv in ab.verdict.helpers)


def test_a_sweep_where_only_the_base_was_measured_claims_nothing():
    """Seen on the H200: the base measured, one configuration failed to start, the other cut
    off: 'no single knob explains it' and '--pairs' would claim knobs that were never tried."""
    p = sweep("attention-backend=fa3", "cuda-graph=off")
    ab = read(p, {"base": store(url(0), INFO, noisy(0))})
    assert ab.verdict.kind == INCONCLUSIVE_V, verdict_line(ab)
    assert all(hv.shape == Shape.ALONE for hv in ab.verdict.helpers)
    assert all(
        (hv.missing, hv.trapped) == (("attention-backend=fa3", "cuda-graph=off"), ())
        for hv in ab.verdict.helpers
    )
    assert ab.verdict.step == Step.ALONE
