"""The run's prompt set as token ids: text prompts tokenized by the first server that answered
(or by the local tokenizer for a server started with --skip-tokenizer-init), cut to fit its
context; and, without a tokenizer anywhere, the one-line error naming the option that helps.
"""

from __future__ import annotations

import numpy as np

from kltui.engines.errors import EngineError
from kltui.engines.sglang import SGLangClient
from kltui.errors import UsageError
from kltui.registry import HELPERS
from kltui.run.config import RunConfig
from kltui.run.prompts import PromptSet, builtin, finalize, load_file
from kltui.run.tokenizer import FIX, SEPARATOR, LocalTokenizer, PendingTokenizer

TOKENIZE_BATCH = 64


def _fit_tokens(cfg: RunConfig, info: dict) -> int | None:
    ctx_len = info.get("context_length") or info.get("max_req_input_len")
    if not isinstance(ctx_len, int) or ctx_len <= 0:
        return None
    # e.g. decode_cache_hit's turn 2 holds prompt + out1 + "," + out2
    turns = max([HELPERS[h].turns for h in cfg.helpers if h in HELPERS] + [1])
    return max(1, ctx_len - turns * cfg.max_new_tokens - 8)


def server_tokenizes(info: dict) -> bool:
    """False for a server started with --skip-tokenizer-init (it takes and returns ids only)."""
    return not info.get("skip_tokenizer_init")


def no_tokenizer_error(url: str, what: str, fix: str) -> UsageError:
    """The usage error for a server without a tokenizer, naming the option that helps."""
    return UsageError(
        f"{url} has no tokenizer (started with --skip-tokenizer-init), so it cannot tokenize "
        f"{what}: pass {fix}"
    )


async def _tokenize(
    client: SGLangClient,
    info: dict,
    texts: list[str],
    tok: LocalTokenizer | PendingTokenizer | None,
    fix: tuple[str, str],
) -> list:
    """Ids of `texts`: by the server when it has a tokenizer (its 400 answer also tells when it
    has none), else by the local tokenizer; neither is a one-line error naming `fix`."""
    if server_tokenizes(info):
        try:
            return await client.tokenize(texts)
        except EngineError as e:
            if e.kind != "no-tokenizer":
                raise
            info["skip_tokenizer_init"] = True  # the helpers read it as /server_info says it
    if tok is None:
        raise no_tokenizer_error(client.url, f"the {fix[0]}", fix[1])
    return [np.asarray(tok.encode(t), dtype=np.int64) for t in texts]


async def build_prompt_set(
    cfg: RunConfig,
    client: SGLangClient,
    info: dict,
    tok: LocalTokenizer | PendingTokenizer | None = None,
) -> PromptSet:
    """The run's prompt set as token ids (text tokenized by the server or the local tokenizer)."""
    source = load_file(cfg.prompts) if cfg.prompts else builtin()
    items = source.items[: cfg.samples]
    texts = [(i, t) for i, t in enumerate(items) if isinstance(t, str)]
    ids: list = list(items)
    also = " with --separator-ids IDS" if _needs_separator(cfg) else ""
    fix = (
        f"text prompts of {source.name}",
        f"{FIX} or --prompts ids.json (token-id lists){also}",
    )
    for start in range(0, len(texts), TOKENIZE_BATCH):
        chunk = texts[start : start + TOKENIZE_BATCH]
        toks = await _tokenize(client, info, [t for _, t in chunk], tok, fix)
        for (i, _), t in zip(chunk, toks, strict=True):
            ids[i] = t
    cut = cfg.max_prompt_tokens
    uncut_note = None
    if source.pre_cut and not cfg.prompt_cut_asked:
        cut = None
        uncut_note = (
            f"{source.name}: token-id lists sent as they are (SGLang's input-id cache is "
            "already cut); --max-prompt-tokens N cuts them again"
        )
    pset = finalize(
        source.name,
        ids,
        max_prompt_tokens=cut,
        seed=cfg.seed,
        fit_tokens=_fit_tokens(cfg, info),
    )
    if uncut_note:
        pset.notes.append(uncut_note)
    if len(source.items) < cfg.samples:
        pset.notes.append(
            f"asked for {cfg.samples} samples but {source.name} holds {len(source.items)} prompts"
        )
    return pset


def _needs_separator(cfg: RunConfig) -> list[str]:
    """The chosen helpers that append the separator "," and have no --separator-ids for it."""
    if cfg.separator_ids:
        return []
    return [n for n in cfg.helpers if n in HELPERS and HELPERS[n].turns > 1]


def check_separator(
    cfg: RunConfig,
    live: list[SGLangClient],
    infos: dict[str, dict],
    tok: LocalTokenizer | PendingTokenizer | None,
) -> None:
    """A helper with a second turn appends "," as ids: without a tokenizer anywhere, say how to
    give them before anything is flushed or measured."""
    needs = _needs_separator(cfg)
    if not needs or tok is not None:
        return
    for c in live:
        if not server_tokenizes(infos[c.url]):
            raise no_tokenizer_error(
                c.url,
                f'{needs[0]}\'s separator "{SEPARATOR}"',
                f'{FIX} or --separator-ids IDS (the ids of tokenizer.encode("{SEPARATOR}"))',
            )
