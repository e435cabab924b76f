"""Evidence and coverage read against a server's state geometry (issue 57; docs/DIAGNOSIS.md).

The field guide's reading of a state bug on a hybrid model: compare divergent and passing
samples by their remainder against the checkpoint chunk and the track interval; read which
checkpoint each hit restored from its cached_tokens; a divergence from the first generated
token points at the restore, one that starts mid-generation at the window handoff or a
checkpoint rotation; and a run whose decoding never crossed the track interval or the window
never exercised them. Positions follow one convention: generated token `pos` of a request with
a P-token input is produced from a context of P + pos tokens, so "the first token past a
boundary B" is the one whose context is B + 1 (pos = B - P + 1; for a window, a prompt already
past it hands off at the first decode step, pos 1). A dense geometry gives nothing here, so a
dense run reads exactly as before.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from kltui.engines.geometry import StateGeometry
from kltui.engines.identity import ServerIdentity
from kltui.readings.diagnosis_parts import Line
from kltui.readings.evidence import shape_of
from kltui.readings.geometry_parts import (
    Boundary,
    Crossed,
    Crossing,
    Handoff,
    Modulus,
    Residues,
    Restored,
    RestoreKind,
    Routing,
    TopFlips,
)
from kltui.registry import HELPERS, CachePath
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState


def geometry_of_info(info: ServerIdentity) -> StateGeometry:
    """The geometry the server's identity recorded (unknown: dense)."""
    return StateGeometry.of(info.get("geometry"))


def stateful(g: StateGeometry) -> bool:
    """Whether the geometry keeps state beyond token-by-token KV (Mamba or a window)."""
    return g.mamba is not None or g.window is not None


def _track(g: StateGeometry) -> int | None:
    t = g.mamba.track_interval if g.mamba is not None else None
    return t.value if t is not None and t.value > 0 else None


def _chunk(g: StateGeometry) -> int | None:
    c = g.mamba.chunk_size if g.mamba is not None else None
    return c.value if c is not None and c.value > 0 else None


def _window(g: StateGeometry) -> int | None:
    return g.window.size.value if g.window is not None and g.window.size.value > 0 else None


def _rows(st: HelperState) -> list[dict]:
    rows = HelperView.of(st).summary.per_sample
    return [
        p
        for p in rows
        if isinstance(p, dict)
        and isinstance(p.get("prompt_len"), int)
        and isinstance(p.get("n_tokens"), int)
    ]


def _decode_path(helper: str) -> bool:
    return helper in HELPERS and HELPERS[helper].cache_path == CachePath.DECODE


def turn1_prompt(st: HelperState, row: dict) -> int:
    """The prompt whose state a hit restores from: decode_cache_hit's turn 1 prompt (its turn-2
    input less turn 1's output, as long as its own, and the separator), else the prompt."""
    if not _decode_path(st.helper):
        return int(row["prompt_len"])
    sep = HelperView.of(st).summary.separator_ids or []
    return max(0, int(row["prompt_len"]) - int(row["n_tokens"]) - len(sep))


# --------------------------------------------------------------------------- evidence
def _residues(ps: Iterable[dict], step: int) -> tuple[int, ...]:
    return tuple(sorted({int(p["prompt_len"]) % step for p in ps}))


def restore_kind(cached: int, prompt: int, chunk: int | None, track: int | None) -> RestoreKind:
    """Which checkpoint `cached` tokens are: a prefill chunk boundary within the prompt, a
    decode checkpoint past it, or neither."""
    if cached <= 0:
        return RestoreKind.NOTHING
    if cached <= prompt and chunk and cached % chunk == 0:
        return RestoreKind.PREFILL_CHUNK
    if cached > prompt and track and cached % track == 0:
        return RestoreKind.DECODE_TRACK
    return RestoreKind.OFF_GRID


def _restored(st: HelperState, div: list[dict], passing: list[dict], g: StateGeometry) -> Line:
    chunk, track = _chunk(g), _track(g)

    def kinds(ps: list[dict]) -> tuple[tuple[RestoreKind, int], ...]:
        c = Counter(
            restore_kind(int(p.get("cached_tokens") or 0), turn1_prompt(st, p), chunk, track)
            for p in ps
        )
        return tuple((k, c[k]) for k in RestoreKind if c[k])

    return Restored(st.helper, chunk, track, kinds(div), kinds(passing))


def boundary_of(prompt: int, first: int, window: int | None, track: int | None) -> Boundary:
    """Where a sample with a `prompt`-token input that first differs at `first` starts, against
    the window handoff and the track-interval boundaries."""
    if window is not None and (
        (prompt <= window and prompt + first - 1 == window) or (prompt > window and first == 1)
    ):
        return Boundary.WINDOW
    if first == 0:
        return Boundary.FIRST
    if track is not None and (prompt + first - 1) % track == 0:
        return Boundary.TRACK
    return Boundary.ELSEWHERE


def _handoff(helper: str, div: list[dict], g: StateGeometry) -> Handoff | None:
    window, track = _window(g), _track(g)
    firsts = [(int(p["prompt_len"]), p.get("first_divergence")) for p in div]
    c = Counter(boundary_of(n, f, window, track) for n, f in firsts if isinstance(f, int))
    if not c:
        return None
    counts = tuple(sorted(((b, k) for b, k in c.items()), key=lambda x: -x[1]))
    return Handoff(helper, sum(c.values()), counts, window, track)


def geometry_lines(st: HelperState, g: StateGeometry) -> list[Line]:
    """A diverging helper's samples against the geometry: their remainders against the chunk
    and the track interval, what their hits restored, where they start to differ."""
    if not stateful(g):
        return []
    rows = _rows(st)
    div = [p for p in rows if p.get("n_nonzero")]
    passing = [p for p in rows if not p.get("n_nonzero")]
    if not div:
        return []
    out: list[Line] = []
    if passing:
        for modulus, step in ((Modulus.CHUNK, _chunk(g)), (Modulus.TRACK, _track(g))):
            if step is not None and step > 1:
                out.append(Residues(st.helper, modulus, step, _residues(div, step),
                                    _residues(passing, step)))  # fmt: skip
    if g.mamba is not None and any(p.get("cached_tokens") for p in rows):
        out.append(_restored(st, div, passing, g))
    if (h := _handoff(st.helper, div, g)) is not None:
        out.append(h)
    return out


def shape_in(st: HelperState, info: ServerIdentity) -> list[Line]:
    """Which sequences diverge and where (`evidence.shape_of`), and on a Mamba or
    sliding-window server the same samples against its geometry."""
    return shape_of(st, info.page_size) + geometry_lines(st, geometry_of_info(info))


# --------------------------------------------------------------------------- coverage
def _crossed_track(prompt: int, n: int, track: int) -> bool:
    """A multiple of `track` lies in (prompt, prompt + n - 1]: decoding saved a checkpoint."""
    return (prompt + n - 1) // track > prompt // track


def _track_need(prompt: int, track: int) -> int:
    return (prompt // track + 1) * track - prompt + 1


def crossing_of(st: HelperState, boundary: Crossed, step: int) -> Crossing | None:
    """How many of a helper's samples crossed `boundary` while decoding: for the track
    interval, the decode whose checkpoint the helper's hit restores (decode_cache_hit's turn 1,
    as long as its turn 2) or its own; for the window, its own decode."""
    rows = _rows(st)
    if not rows:
        return None
    crossed, need = 0, 0
    for p in rows:
        n = int(p["n_tokens"])
        if boundary is Crossed.TRACK:
            prompt = turn1_prompt(st, p)
            crossed += _crossed_track(prompt, n, step)
            need = max(need, _track_need(prompt, step))
        else:
            prompt = int(p["prompt_len"])
            crossed += prompt + n - 1 > step
            need = max(need, step - prompt + 2)
    return Crossing(st.helper, boundary, step, crossed, len(rows), None if crossed == len(rows)
                    else max(need, 1))  # fmt: skip


def crossings(states: Iterable[HelperState], g: StateGeometry) -> list[Crossing]:
    """Per helper, the samples whose decoding crossed the track interval and the window."""
    bounds = [(b, s) for b, s in ((Crossed.TRACK, _track(g)), (Crossed.WINDOW, _window(g))) if s]
    out = []
    for st in states:
        for b, step in bounds:
            if (c := crossing_of(st, b, step)) is not None:
                out.append(c)
    return out


def routing_of(
    states: Iterable[HelperState], g: StateGeometry, greedy: bool = True
) -> Routing | None:
    """On a MoE model, the helper with the largest single-token k3 against its mean, with the
    top-1 flips in its drill-down windows where the run decoded greedily (`greedy`)."""
    if g.experts is None:
        return None
    rows = [
        (float(s.max_k3), float(s.avg_kl_div), int(s.n_tail or 0), st)
        for st in states
        if (s := HelperView.of(st).summary).max_k3 is not None and s.avg_kl_div is not None
    ]
    if not rows:
        return None
    top, level, tail, st = max(rows, key=lambda r: r[0])
    flips = top1_flips(st) if greedy else None
    return Routing(g.experts.n_experts, g.experts.top_k, st.helper, top, level, tail, flips)


def _logprob(alt: list) -> float:
    lp = alt[1] if len(alt) > 1 else None
    return float(lp) if isinstance(lp, int | float) and math.isfinite(lp) else -math.inf


def top1_flips(st: HelperState) -> TopFlips | None:
    """Every generated position the drill-down's extras cover (each counted once, however many
    windows hold it): is the extras request's top-1 the token the decode chose? At temperature
    0 the decoded token is the decode's own top-1, so a difference is a top-1 flip between the
    two paths (the extras request is a prefill of its own: another batch than the gate's)."""
    seen: dict[tuple[int, int], tuple[bool, bool]] = {}
    for sample, windows in st.extras.items():
        sc = st.book.samples.get(sample)
        if sc is None:
            continue
        for ev in windows:
            for i, (tok, alts) in enumerate(zip(ev.token_ids.tolist(), ev.top, strict=False)):
                pos = ev.start + i
                if not alts or not 0 <= pos < sc.k3.size:
                    continue
                best = max(alts, key=_logprob)[0]
                seen[(sample, pos)] = (int(best) != int(tok), bool(sc.k3[pos] > st.tail_threshold))
    if not seen:
        return None
    flips = [f for f, _ in seen.values()]
    tails = [f for f, t in seen.values() if t]
    return TopFlips(
        samples=len({s for s, _ in seen}),
        positions=len(seen),
        flips=sum(flips),
        tail_positions=len(tails),
        tail_flips=sum(tails),
    )
