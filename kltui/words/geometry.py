"""A server's state geometry (engines/geometry.StateGeometry) in words: one phrase per part, each
with where its figures came from, e.g. "mamba extra_buffer · track 256 · chunk 64 (server_info,
sglang-default)", "sliding window 128 on 2 of 4 layers (config.json)", "MoE 8 experts top-2
(config.json)". A dense model says nothing: its server line stays as it was.
"""

from __future__ import annotations

from kltui.engines.geometry import Experts, MambaState, SlidingWindow, Source, StateGeometry


def _sources(*sources: Source | None) -> str:
    """The distinct sources, in order, as " (a, b)"."""
    seen = list(dict.fromkeys(str(s) for s in sources if s is not None))
    return f" ({', '.join(seen)})" if seen else ""


def mamba_phrase(m: MambaState) -> str:
    """ "mamba extra_buffer · track 256 · chunk 64 (sources)"."""
    parts = ["mamba " + (str(m.strategy) if m.strategy else "?")]
    if m.track_interval is not None:
        parts.append(f"track {m.track_interval.value}")
    if m.chunk_size is not None:
        parts.append(f"chunk {m.chunk_size.value}")
    track = m.track_interval.source if m.track_interval else None
    chunk = m.chunk_size.source if m.chunk_size else None
    return " · ".join(parts) + _sources(m.strategy_source, track, chunk)


def window_phrase(w: SlidingWindow) -> str:
    """ "sliding window 128 on 2 of 4 layers (source)"."""
    where = ""
    if w.n_layers is not None and w.layers:
        where = f" on {len(w.layers)} of {w.n_layers} layers"
    ratio = (
        "" if w.full_tokens_ratio is None else f" · swa_full_tokens_ratio {w.full_tokens_ratio:g}"
    )
    return f"sliding window {w.size.value}{where}{ratio}" + _sources(w.size.source)


def experts_phrase(e: Experts) -> str:
    """ "MoE 8 experts top-2 (source)"."""
    top = "" if e.top_k is None else f" top-{e.top_k}"
    return f"MoE {e.n_experts} experts{top}" + _sources(e.source)


def geometry_phrases(g: StateGeometry) -> list[str]:
    """The geometry's parts in words; empty for a dense model (or one nothing was said of)."""
    out = []
    if g.mamba is not None:
        out.append(mamba_phrase(g.mamba))
    if g.window is not None:
        out.append(window_phrase(g.window))
    if g.experts is not None:
        out.append(experts_phrase(g.experts))
    return out


def geometry_line(g: StateGeometry) -> str | None:
    """The geometry as one line, None when there is nothing to say (dense)."""
    phrases = geometry_phrases(g)
    return " · ".join(phrases) if phrases else None
