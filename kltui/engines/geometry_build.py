"""One SGLang server's StateGeometry, built from what it reports and its model's config.json.

`/server_info` is the authority on the cache: SGLang resolves `uses_mamba_radix_cache`,
`mamba_radix_cache_strategy` and `mamba_track_interval` at launch and reports them (0.5.17 on);
`page_size` and `swa_full_tokens_ratio` too. The model's config.json says what the server does
not: the Mamba chunk, the sliding window and its layers, the experts. Where a Mamba model's
server reports no cache keys (an older SGLang), SGLang's defaults stand in, marked
`sglang-default`: strategy extra_buffer, track interval 256.

The chunk a prefill checkpoint lands on is SGLang's `mamba_cache_chunk_size`
(srt/arg_groups/overrides.py, 0.5.23): max(the model's mamba chunk size, page size).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kltui.engines.geometry import MambaState, MambaStrategy, Source, Sourced, StateGeometry
from kltui.engines.identity import as_float, as_int
from kltui.engines.model_config import MAMBA_ARCHS, ModelConfig, default_chunk

DEFAULT_STRATEGY = MambaStrategy.EXTRA_BUFFER  # what SGLang's "auto" resolves to on CUDA
DEFAULT_TRACK_INTERVAL = 256  # --mamba-track-interval's default
DEFAULT_PAGE_SIZE = 1
MAMBA_KEYS = ("uses_mamba_radix_cache", "mamba_radix_cache_strategy", "mamba_track_interval")


def build_geometry(
    info: Mapping[str, Any], model: Mapping[str, Any], config: ModelConfig | None
) -> StateGeometry:
    """The geometry of a server from its /server_info, /model_info and config.json (None: not
    readable here). Figures nothing said are None; `known` says whether anything did."""
    page = _page(info)
    mamba = _mamba(info, model, config, page) if _is_mamba(info, model, config) else None
    ratio = as_float(info.get("swa_full_tokens_ratio"))
    return StateGeometry(
        page_size=page,
        mamba=mamba,
        window=config.window(ratio) if config else None,
        experts=config.experts() if config else None,
        config_path=config.path if config else None,
        known=config is not None or any(k in info for k in MAMBA_KEYS),
    )


def _page(info: Mapping[str, Any]) -> Sourced:
    page = as_int(info.get("page_size"))
    if page is None or page <= 0:
        return Sourced(DEFAULT_PAGE_SIZE, Source.DEFAULT)
    return Sourced(page, Source.SERVER_INFO)


def _architecture(model: Mapping[str, Any], config: ModelConfig | None) -> str | None:
    if config is not None and config.architecture:
        return config.architecture
    archs = model.get("architectures")  # /model_info in SGLang 0.5.23
    return archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None


def _is_mamba(
    info: Mapping[str, Any], model: Mapping[str, Any], config: ModelConfig | None
) -> bool:
    """The server's word when it gives one and its radix cache is on (SGLang reports False for a
    Mamba model whose radix cache is off: no checkpoints then); else the model's."""
    said = info.get("uses_mamba_radix_cache")
    if isinstance(said, bool) and (said or not info.get("disable_radix_cache")):
        return said
    if config is not None:
        return config.is_mamba
    return _architecture(model, None) in MAMBA_ARCHS


def _mamba(
    info: Mapping[str, Any], model: Mapping[str, Any], config: ModelConfig | None, page: Sourced
) -> MambaState:
    said = info.get("mamba_radix_cache_strategy")
    strategy = next((m for m in MambaStrategy if m.value == said), None)
    strategy_source = Source.SERVER_INFO
    if strategy is None:  # not reported, or "auto" (unresolved): SGLang's default on CUDA
        strategy, strategy_source = DEFAULT_STRATEGY, Source.DEFAULT
    track = as_int(info.get("mamba_track_interval"))
    interval = (
        Sourced(track, Source.SERVER_INFO)
        if track is not None and track > 0
        else Sourced(DEFAULT_TRACK_INTERVAL, Source.DEFAULT)
    )
    arch = _architecture(model, config)
    own = config.mamba_chunk() if config else Sourced(default_chunk(arch), Source.DEFAULT)
    chunk = own if own.value >= page.value else page
    return MambaState(strategy, strategy_source, interval, chunk, own)
