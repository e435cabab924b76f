"""The hf: reference at the start of a run: its recorded identity (no worker yet: the folder,
its weights hash, the dtype it will run in) and the same-weights check, which refuses (exit 2)
before anything is flushed or measured unless --allow-different-models.

The dtype is the one asked (--hf-dtype, `baseline.dtype`), else the SGLang server's reported
dtype (so that a comparison is not across dtypes by accident), else the checkpoint's own.
"""

from __future__ import annotations

import asyncio

from kltui.engines.hf import HFSettings, config_dtype, reference_identity
from kltui.engines.weights import local_weights
from kltui.errors import UsageError
from kltui.helpers.context import ReferencePlan
from kltui.metrics.engine_settings import norm_dtype
from kltui.metrics.hf_judge import weights_state
from kltui.run.config import RunConfig


def settings_of(cfg: RunConfig) -> HFSettings | None:
    """The run's reference settings (None: no hf: baseline)."""
    return HFSettings.of(cfg.hf_baseline)


def resolved_dtype(s: HFSettings, server: dict | None) -> str:
    """The dtype the reference runs in (see the module docstring)."""
    if s.dtype and s.dtype != "auto":
        return s.dtype
    reported = norm_dtype((server or {}).get("dtype"))
    if reported in ("float32", "bfloat16", "float16"):
        return reported
    from kltui.engines.hf import check_folder

    return config_dtype(check_folder(s.path, "--baseline hf:")) or "float32"


async def _hash(record: dict) -> None:
    if record.get("local_weights_sha256") is None and not record.get("error"):
        w = await asyncio.to_thread(local_weights, str(record.get("url")), record.get("model_path"))
        record.update(w.record())


async def connect_reference(cfg: RunConfig, servers: list[dict], live: list[str]) -> dict | None:
    """Appends the reference's identity to `servers` (RunStarted.servers) and checks that the
    first live SGLang server and the vLLM baseline load its weights; the identity, or None."""
    s = settings_of(cfg)
    if s is None:
        return None
    by_url = {str(r.get("url")): r for r in servers}
    first = by_url.get(live[0]) if live else None
    ident = await asyncio.to_thread(reference_identity, s, resolved_dtype(s, first))
    record = ident.record()
    servers.append(record)
    compared = [r for r in (first, by_url.get(str(cfg.baseline))) if r is not None]
    for r in compared:
        await _hash(r)
        state, why = weights_state(r, record)
        if state == "different" and not cfg.allow_different_models:
            raise UsageError(
                f"--baseline hf:{s.path}: the reference is not the model {r.get('url')} serves "
                f"({why}); its numbers would compare other weights; --allow-different-models "
                "runs it anyway"
            )
    return record


def reference_plan(cfg: RunConfig, servers: list[dict], identity: dict | None) -> ReferencePlan:
    """What hf_reference needs (see ReferencePlan)."""
    s = settings_of(cfg)
    if s is None or identity is None:
        raise ValueError("no hf: reference in this run")
    return ReferencePlan(
        settings=s,
        identity=identity,
        engines={str(r.get("url")): r for r in servers if r.get("engine") != "hf"},
        vllm_url=cfg.baseline,
        vllm_api_key=cfg.baseline_api_key() if cfg.baseline else None,
        allow_different_models=cfg.allow_different_models,
    )
