"""Drill-down extras for a sample of a replayed run, from the recorded server while it answers.

A recording keeps no prompt ids, so the prompts are rebuilt from the recorded config on that
server (as the run built them) and used only when they hash to the recorded prompt set and the
server still serves the recorded model. Then one bounded request, as for a sample opened after a
live run (`helpers.extras.for_opened`); otherwise one line says why not.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from kltui.engines.errors import EngineError
from kltui.engines.identity import identity_of
from kltui.engines.sglang import SGLangClient
from kltui.errors import UsageError
from kltui.helpers.extras import fetch_extras, opened_window
from kltui.helpers.phases import Run
from kltui.registry import HELPERS
from kltui.run.config import RunConfig
from kltui.run.prompt_ids import build_prompt_set
from kltui.run.runner import helper_context
from kltui.session.events import Event, RunStarted
from kltui.session.store import HelperState, RecordedConfig

# what rebuilding the prompts and one prefill-only request need from the recorded config
_KEYS = ("samples", "prompts", "max_prompt_tokens", "seed", "temperature", "top_k", "helpers")


class NotFetched(Exception):
    """Why a replayed sample's extras cannot be fetched (one line for the drill-down)."""


def config_of(run: RunStarted, server: str) -> RunConfig:
    """The recorded run's settings that decide its prompts and requests, aimed at `server`."""
    rec = RecordedConfig.of(run.config).recorded
    try:
        cfg = RunConfig(servers=[server], **{k: rec[k] for k in _KEYS if k in rec})
        return dataclasses.replace(cfg, request_timeout=min(cfg.request_timeout, 60.0))
    except (TypeError, ValueError) as e:
        raise NotFetched(f"the recorded config cannot be read back ({e})") from None


async def replay_extras(
    run: RunStarted, st: HelperState, sample: int, around: int | None
) -> list[Event]:
    """Top-k and text of `sample` of a replayed helper from its recorded server: one request,
    after checking that the server serves the recorded model and the rebuilt prompts hash to
    the recorded ones. Raises NotFetched with the reason otherwise."""
    spec = HELPERS.get(st.helper)
    sc = st.book.samples.get(sample)
    if spec is None or not spec.extras or sc is None:
        raise NotFetched(f"{st.helper} has no drill-down extras to fetch")
    cfg = config_of(run, st.server)
    if cfg.top_k <= 0:
        raise NotFetched("top_k 0 in this run's config: no top-k or token text is fetched")
    recorded = identity_of(run.servers, st.server)
    client = SGLangClient(st.server, cfg.server_api_key(), timeout=cfg.request_timeout)
    try:
        try:
            info = await client.server_info()
        except EngineError as e:
            raise NotFetched(f"the recorded server does not answer: {e.message}") from None
        model, was = info.get("model_path"), recorded.model_path
        if was and model != was:
            raise NotFetched(f"the server now serves {model!r}, the recording {was!r}")
        try:
            pset = await build_prompt_set(cfg, client, info)
        except (EngineError, UsageError) as e:
            raise NotFetched(f"the prompts cannot be rebuilt: {e}") from None
        if pset.identity != (run.prompt_set or {}).get("sha256") or sample >= len(pset.ids):
            raise NotFetched("the rebuilt prompts differ from the recorded ones")
        prompt = np.asarray(pset.ids[sample])
        if prompt.size != sc.prompt_len:
            # the cache helpers send more than the prompt (a shared prefix, a second turn)
            raise NotFetched(f"{st.helper}'s input for this sample is not rebuilt from a replay")
        ctx = helper_context(cfg, spec, client, info, pset)
        helper_run = Run(ctx, st.helper)
        helper_run.book.add(sample, sc.token_ids, sc.lp_a, sc.lp_b, sc.cached_tokens, sc.prompt_len)
        helper_run.scored_inputs[sample] = np.concatenate([prompt, np.asarray(sc.token_ids)])
        lo, hi = opened_window(sc.metrics.n_tokens, around)
        return [
            ev async for ev in fetch_extras([(helper_run, sample, lo, hi)], cfg.top_k, "opened")
        ]
    finally:
        await client.aclose()
