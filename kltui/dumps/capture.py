"""Driving a live SGLang server's dumper (SGLang 0.5.17 and 0.5.23 alike).

The hooks exist only when the server was launched with DUMPER_SERVER_PORT=reuse (which also
registers the `/dumper/{configure,get_state,reset}` routes on the server's own port) and
DUMPER_NON_INTRUSIVE_MODE=all (the hooks' mode is fixed when the model loads; `core` writes no
module tensors). DUMPER_ENABLE=0 keeps warm-up passes from dumping. The dumper's `step` counts
forward passes while enabled; `dir`, `exp_name` and `enable` are set over HTTP. `/dumper/reset`
is never called: it removes the hooks for the rest of the server's life.

The capture: flush, dump the decode run (the prompt's prefill + K decode steps), stop, flush,
dump one fresh prefill of prompt + the K tokens fed back during decode, stop."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kltui.dumps.files import DumpError
from kltui.engines.errors import EngineError

LAUNCH_ENV = "DUMPER_ENABLE=0 DUMPER_SERVER_PORT=reuse DUMPER_NON_INTRUSIVE_MODE=all"


def launch_settings(dump_dir: str) -> str:
    """How to launch an SGLang server with the dumper hooks kltui needs."""
    return (
        "launch the server with SGLang's dumper hooks (sglang.srt.debug_utils.dumper):\n"
        f"  {LAUNCH_ENV} DUMPER_DIR={dump_dir} \\\n"
        "    python -m sglang.launch_server <your flags> "
        "--disable-cuda-graph --disable-prefill-cuda-graph\n"
        "  (DUMPER_SERVER_PORT=reuse is a literal: it adds /dumper/* to the server's own port; "
        "mode 'all' hooks every module; CUDA graphs replay kernels without running the hooks)"
    )


class HooksMissing(DumpError):
    """The server has no usable dumper hooks (exit 2); the CLI adds `launch_settings`."""


class ServerBusy(EngineError):
    """The server is serving other requests, so a capture would mix them in."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(server, message, kind="busy")


@dataclass
class Capture:
    """What one capture produced: the two dump folders, the prompt, the tokens and the server's settings."""

    dir_decode: Path
    dir_prefill: Path
    prompt: list[int]
    output_ids: list[int]
    server_info: dict
    dumper_config: dict


async def dumper_call(client, method: str, body: dict | None = None) -> list:
    """POST one /dumper/ method and return its answer."""
    try:
        res = await client.post_json(f"/dumper/{method}", body or {})
    except EngineError as e:
        if e.kind in ("http-404", "http-405"):
            raise HooksMissing(
                f"{client.url} has no /dumper/ routes (not launched with DUMPER_SERVER_PORT=reuse)"
            ) from None
        raise
    if not isinstance(res, list):
        raise client.fail(f"/dumper/{method} did not return a list (one entry per rank)")
    return res


def check_server(info: dict, state: list) -> dict:
    """The dumper config, after checking the server is set up for a capture."""
    if not state or not isinstance(state[0], dict) or "config" not in state[0]:
        raise HooksMissing("/dumper/get_state answered without a config")
    cfg = state[0]["config"]
    if cfg.get("non_intrusive_mode") != "all":
        raise HooksMissing(
            f"the dumper's non-intrusive mode is {cfg.get('non_intrusive_mode')!r}, not 'all' "
            "(fixed at launch: module tensors are not hooked)"
        )
    if cfg.get("enable"):
        raise HooksMissing(
            "the dumper is already enabled (every pass is being dumped): launch with "
            'DUMPER_ENABLE=0, or POST /dumper/configure {"enable": false} first'
        )
    for flag in ("disable_cuda_graph", "disable_prefill_cuda_graph"):
        if flag in info and info[flag] is False:
            raise HooksMissing(
                f"the server runs without --{flag.replace('_', '-')}: hooks do not run inside "
                "a replayed CUDA graph"
            )
    return cfg


async def check_idle(client) -> None:
    """Refuse a busy server: other requests would be batched into the dumped passes."""
    for route, keys in (
        ("/v1/loads?include=core", ("num_running_reqs", "num_waiting_reqs")),
        ("/get_load", ("num_reqs",)),
    ):
        try:
            data = await client.request_json("GET", route)
        except EngineError as e:
            if e.kind in ("http-404", "http-405"):
                continue
            raise
        loads = data.get("loads") if isinstance(data, dict) else data
        if not isinstance(loads, list):
            return
        busy = sum(int(x.get(k) or 0) for x in loads if isinstance(x, dict) for k in keys)
        if busy:
            raise ServerBusy(
                client.url,
                f"the server is busy ({busy} requests running or waiting per {route.split('?')[0]})"
                ": other requests would be batched into the dumped passes; retry when idle",
            )
        return


async def _configure(client, **body) -> None:
    await dumper_call(client, "configure", body)


async def _generate(client, ids: list[int], max_new: int, rid: str) -> list[int]:
    body = {
        "input_ids": ids,
        "sampling_params": {"temperature": 0.0, "max_new_tokens": max_new, "ignore_eos": True},
        "rid": rid,
    }
    res = await client.post_json("/generate", body)
    if isinstance(res, list) and len(res) == 1:
        res = res[0]
    out = res.get("output_ids") if isinstance(res, dict) else None
    if not isinstance(out, list) or not all(isinstance(x, int) for x in out):
        raise client.fail("/generate answer has no output_ids list")
    if len(out) != max_new:
        raise client.fail(f"/generate returned {len(out)} tokens, asked for {max_new}")
    return out


async def probe(client) -> tuple[dict, dict]:
    """(server_info, dumper config) of a server whose hooks are usable; else HooksMissing."""
    info = await client.server_info()
    state = await dumper_call(client, "get_state")
    return info, check_server(info, state)


async def capture(
    client,
    prompt: list[int],
    new_tokens: int,
    dump_dir: Path,
    step: Callable[[str], None] | None = None,
) -> Capture:
    """Decode new_tokens from prompt, then prefill prompt + those tokens, dumping both."""
    step = step or (lambda _text: None)
    info, cfg = await probe(client)
    await check_idle(client)
    tag = f"kltui_{time.strftime('%Y%m%d-%H%M%S')}_{uuid.uuid4().hex[:6]}"
    exp_decode, exp_prefill = f"{tag}_decode", f"{tag}_prefill"
    common = {"dir": str(dump_dir), "enable_output_console": False}
    try:
        await client.flush_cache()
        step(f"dumping the decode run: prefill of {len(prompt)} tokens + {new_tokens} decode steps")
        await _configure(client, enable=True, exp_name=exp_decode, **common)
        # K decode steps feed the prompt's next K tokens back: K + 1 new tokens in all.
        out = await _generate(client, prompt, new_tokens + 1, f"{tag}-decode")
        await _configure(client, enable=False)
        await client.flush_cache()
        step(f"dumping one fresh prefill of {len(prompt) + new_tokens} tokens")
        await _configure(client, enable=True, exp_name=exp_prefill, **common)
        await _generate(client, prompt + out[:new_tokens], 1, f"{tag}-prefill")
    finally:
        await asyncio.shield(_disable_quietly(client))
    a, b = dump_dir / exp_decode, dump_dir / exp_prefill
    for d in (a, b):
        if not d.is_dir():
            raise DumpError(
                f"{d}: the server wrote no dumps here (a remote server writes to its own disk: "
                f"copy {d.name} and its sibling, then run `kltui dumps analyze`)"
            )
    return Capture(a, b, prompt, out, info, cfg)


async def _disable_quietly(client) -> None:
    try:
        await _configure(client, enable=False)
    except (EngineError, DumpError):
        pass


def read_prompt_ids(path: str) -> list[int]:
    """The prompt token ids of a JSON file."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise DumpError(f"{path}: cannot read ({e.strerror or e})") from None
    try:
        data = json.loads(text)
    except ValueError:
        data = text.replace(",", " ").split()
    if isinstance(data, dict):
        data = data.get("input_ids")
    try:
        ids = [int(x) for x in data]
    except (TypeError, ValueError):
        raise DumpError(
            f'{path}: not a list of token ids (a JSON list, {{"input_ids": [...]}} or '
            "whitespace-separated integers)"
        ) from None
    if len(ids) < 2 or min(ids) < 0:
        raise DumpError(f"{path}: need at least 2 non-negative token ids, got {len(ids)}")
    return ids
