"""The whole drill-down on a live server (probe the hooks, capture, analyze), shared by
`kltui dumps` and the TUI, and loading a saved `kltui dumps --json` result.

torch is imported in a thread (`asyncio.to_thread`): importing it and reading the `.pt` files
takes seconds, and the TUI's event loop must keep drawing meanwhile."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kltui.dumps.files import DumpError

if TYPE_CHECKING:
    from kltui.dumps.analyze import VerdictWords

# what every analysis carries; a JSON file without them is not a `kltui dumps --json` result
RESULT_KEYS = ("verdict", "identical", "modules", "prefill")
# what only a live capture knows (null after `dumps analyze A B`)
CAPTURE_KEYS = ("server", "server_version", "prompt_ids", "output_ids", "new_tokens")


def with_capture_keys(result: dict) -> dict:
    """The result with every capture key, null where no live capture made it."""
    return {**dict.fromkeys(CAPTURE_KEYS), **result}


def client_for(server: str, api_key: str | None, timeout: float):
    """An SGLang client for a dumps command's --server."""
    from kltui.engines.http import normalize_url, resolve_api_key
    from kltui.engines.sglang import SGLangClient

    return SGLangClient(normalize_url(server), resolve_api_key(api_key), timeout=timeout)


async def drill_down(
    client,
    server: str,
    dump_dir: Path,
    *,
    prompt: list[int] | None = None,
    prompt_tokens: int = 32,
    new_tokens: int = 8,
    step: Callable[[str], None] | None = None,
    confirm_flush: Callable[[object], Awaitable[bool]] | None = None,
    words: VerdictWords,
) -> dict:
    """Capture on `client` (hooks checked first, so a server without them is told before torch
        is loaded) and analyze; the result as `kltui dumps --json` writes it. The capture flushes
        the cache twice: `confirm_flush(client)` False stops before anything is flushed. `words`
    says the verdict (`words/dumps.verdict_words`; `analyze`)."""
    from kltui.dumps.capture import capture, probe
    from kltui.dumps.files import require_torch

    step = step or (lambda _text: None)
    step(f"checking {server} for the dumper hooks")
    await probe(client)
    if confirm_flush is not None and not await confirm_flush(client):
        raise DumpError(f"cancelled: {server} was not flushed")
    step("loading torch")
    await asyncio.to_thread(require_torch)
    if prompt is None:
        prompt = await builtin_prompt(client, prompt_tokens)
    cap = await capture(client, prompt, new_tokens, dump_dir, step)
    step(f"analyzing {cap.dir_decode.name} against {cap.dir_prefill.name}")
    from kltui.dumps.analyze import analyze

    result = await asyncio.to_thread(analyze, cap.dir_decode, cap.dir_prefill, words)
    return {
        "server": server,
        "server_version": cap.server_info.get("version"),
        "prompt_ids": cap.prompt,
        "output_ids": cap.output_ids,
        "new_tokens": new_tokens,
        **result,
    }


async def builtin_prompt(client, n: int) -> list[int]:
    """The first n token ids of the built-in prompts, tokenized by the server."""
    from kltui.errors import UsageError
    from kltui.run.builtin_prompts import PROMPTS

    ids: list[int] = []
    for text in PROMPTS:
        ids += [int(x) for x in (await client.tokenize([text]))[0]]
        if len(ids) >= n:
            return ids[:n]
    raise UsageError(f"the built-in prompts hold only {len(ids)} tokens; use --prompt-ids")


def load_result(path: str) -> dict:
    """A saved `kltui dumps --json` result (JSON only: no torch); DumpError names the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise DumpError(f"{path}: cannot read ({getattr(e, 'strerror', None) or e})") from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise DumpError(f"{path}: not JSON ({e})") from None
    if not isinstance(data, dict):
        raise DumpError(f"{path}: not a `kltui dumps --json` result (not an object)")
    from kltui.session.codec import restore_float

    data = restore_float(data)  # {"$float": "nan"} back to the float
    missing = [k for k in RESULT_KEYS if k not in data]
    if missing:
        raise DumpError(
            f"{path}: not a `kltui dumps --json` result (no {', '.join(repr(k) for k in missing)})"
        )
    if not isinstance(data["prefill"], dict):
        raise DumpError(f"{path}: 'prefill' is not an object")
    _rows(path, "modules", data["modules"], MODULE_FIELDS)
    _rows(path, "prefill.modules", data["prefill"].get("modules", []), MODULE_FIELDS)
    _rows(path, "steps", data.get("steps", []), STEP_FIELDS)
    return data


_NUM = (int, float, type(None))
# the fields the module and step tables draw, and the types they draw
MODULE_FIELDS = {
    "module": (str,),
    "status": (str,),
    "inputs_identical": (bool, type(None)),
    "output_identical": (bool, type(None)),
    "max_abs_diff": (*_NUM, str),
    "position": (int, type(None)),
}
STEP_FIELDS = {
    "decode_step": (int,),
    "position": (int,),
    "identical": (bool, type(None)),
    "max_abs_diff": (*_NUM, str),
    "first_divergent_module": (str, type(None)),
}


def _rows(path: str, name: str, rows, fields: dict) -> None:
    if not isinstance(rows, list):
        raise DumpError(f"{path}: {name!r} is not a list")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DumpError(f"{path}: {name}[{i}] is not an object")
        for key, types in fields.items():
            if not isinstance(row.get(key, ...), types):
                raise DumpError(f"{path}: {name}[{i}].{key} is missing or of the wrong type")
