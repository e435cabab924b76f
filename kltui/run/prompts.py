"""Prompt sets: the built-in set and files, seeded truncation, and the set's identity hash.

Formats: `.txt` (one prompt per line), `.jsonl` (`{"text": ...}`, `{"input_ids": [...]}`,
`{"prompt": ...}` or a LongBench-v2 record `{"context", "question"}` per line), `.json` (a list
of token-id lists, the format of SGLang's LongBench input-id cache, or a list of such records
or strings).
Text is tokenized by the server, so no local tokenizer is needed and ids match the server's.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kltui.errors import FileLineError
from kltui.run.builtin_prompts import PROMPTS

DEFAULT_MAX_PROMPT_TOKENS = 3000  # kl_test_utils.DEFAULT_PROMPT_TOKENS
MAX_TOKEN_ID = 2**31 - 1  # beyond any vocabulary; larger ids would overflow numpy int64 too
DEFAULT_SEED = 0


class PromptFileError(FileLineError):
    """A prompt file that cannot be used, named with its line."""


@dataclass
class PromptSource:
    """Prompts as loaded: each item is either text (str) or token ids (list[int])."""

    name: str
    items: list[str | list[int]]

    @property
    def pre_cut(self) -> bool:
        """A .json list of token-id lists: the format of SGLang's input-id cache, whose prompts
        SGLang has already cut; cutting them again would send other inputs than SGLang's CI."""
        return self.name.lower().endswith(".json") and all(isinstance(x, list) for x in self.items)


@dataclass
class PromptSet:
    """The token ids of a run's prompts and where they came from."""

    source: str
    ids: list[np.ndarray]
    max_prompt_tokens: int | None
    seed: int
    notes: list[str] = field(default_factory=list)

    @property
    def identity(self) -> str:
        """The hash that identifies these prompts across runs."""
        return identity_hash(self.ids)

    def to_json(self) -> dict[str, Any]:
        """The prompts' source, count, hash and token counts as a JSON object."""
        lengths = np.array([len(x) for x in self.ids]) if self.ids else np.zeros(0, dtype=int)
        return {
            "source": self.source,
            "n": len(self.ids),
            "sha256": self.identity,
            "tokens": int(lengths.sum()),
            "min_len": int(lengths.min()) if lengths.size else 0,
            "max_len": int(lengths.max()) if lengths.size else 0,
            "max_prompt_tokens": self.max_prompt_tokens,
            "seed": self.seed,
        }


def identity_hash(ids: list[np.ndarray]) -> str:
    """sha256 over (length, ids) of every prompt as sent: a different set cannot hash the same."""
    h = hashlib.sha256()
    for x in ids:
        arr = np.asarray(x, dtype="<i8")
        h.update(np.uint64(arr.size).tobytes())
        h.update(arr.tobytes())
    return h.hexdigest()[:16]


def builtin() -> PromptSource:
    """The built-in prompts."""
    return PromptSource("builtin", list(PROMPTS))


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise PromptFileError(str(path), "file not found") from None
    except OSError as e:
        raise PromptFileError(str(path), f"cannot read ({e.strerror})") from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise PromptFileError(str(path), "UTF-16 text; save the file as UTF-8")
    if b"\x00" in raw[:4096]:
        raise PromptFileError(
            str(path), "binary file (NUL bytes); expected UTF-8 text, one prompt per line or JSON"
        )
    try:
        return raw.decode("utf-8-sig")  # a BOM from a Windows editor is not part of a prompt
    except UnicodeDecodeError as e:
        raise PromptFileError(
            str(path), f"not UTF-8 text (byte {e.start}); save the file as UTF-8"
        ) from None


def _item(obj, path: str, line: int | None) -> str | list[int]:
    if isinstance(obj, str):
        if not obj.strip():
            raise PromptFileError(path, "empty prompt", line)
        return obj
    if isinstance(obj, list):
        if not obj or not all(isinstance(t, int) and not isinstance(t, bool) for t in obj):
            raise PromptFileError(
                path, "a token-id list must be a non-empty list of integers", line
            )
        if min(obj) < 0:
            raise PromptFileError(path, "token ids must be >= 0", line)
        if max(obj) > MAX_TOKEN_ID:
            raise PromptFileError(path, f"token id {max(obj)} is out of range", line)
        return obj
    if isinstance(obj, dict):
        if "input_ids" in obj:
            return _item(obj["input_ids"], path, line)
        if "text" in obj:
            if not isinstance(obj["text"], str):
                raise PromptFileError(path, "field 'text' must be a string", line)
            return _item(obj["text"], path, line)
        if "prompt" in obj:
            # the key of vLLM's `bench serve --dataset-name custom` files and of the OpenAI
            # completions request: a string, or token ids as that request allows
            if not isinstance(obj["prompt"], str | list):
                raise PromptFileError(
                    path, "field 'prompt' must be a string or a token-id list", line
                )
            return _item(obj["prompt"], path, line)
        if "context" in obj and "question" in obj:
            # LongBench-v2 records, joined exactly as kl_test_utils does.
            return _item(f"{obj['context']} {obj['question']}", path, line)
        keys = ", ".join(sorted(obj)[:6])
        raise PromptFileError(path, f"record has none of {RECORD_KEYS} (has {keys})", line)
    raise PromptFileError(path, f"unexpected {type(obj).__name__}; expected a prompt", line)


RECORD_KEYS = "'input_ids', 'text', 'prompt', 'context'+'question'"  # read in this order


def load_file(path_str: str) -> PromptSource:
    """The prompts of a .txt, .jsonl or .json file."""
    path = Path(path_str)
    suffix = path.suffix.lower()
    if suffix not in (".txt", ".jsonl", ".json"):
        raise PromptFileError(path_str, "unknown extension; use .txt, .jsonl or .json")
    text = _read_text(path)
    try:
        items = _parse(text, suffix, path_str)
    except RecursionError:
        raise PromptFileError(path_str, "JSON nested too deeply to be a prompt file") from None
    if not items:
        raise PromptFileError(path_str, f"contains no prompts; {_EXPECTED[suffix]}")
    return PromptSource(str(path), items)


_EXPECTED = {
    ".txt": "expected one prompt per line",
    ".jsonl": "expected one JSON object per line",
    ".json": "expected a JSON list of prompts or token-id lists",
}


def _json_hint(text: str, suffix: str, msg: str) -> str:
    """What the file probably is, when its content does not match its extension."""
    head = text.lstrip()[:1]
    if suffix == ".json" and msg.startswith("Extra data") and head == "{":
        return "; it looks like JSON Lines: rename the file to .jsonl"
    if suffix == ".jsonl" and head == "[":
        return "; it looks like one JSON document: rename the file to .json"
    if head not in ("[", "{", '"'):
        return "; it looks like plain text: use a .txt file, one prompt per line"
    return ""


def _parse(text: str, suffix: str, path_str: str) -> list[str | list[int]]:
    items: list[str | list[int]] = []
    if suffix == ".txt":
        items = [line for line in text.splitlines() if line.strip()]
    elif suffix == ".jsonl":
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                hint = _json_hint(text, suffix, e.msg)
                raise PromptFileError(path_str, f"invalid JSON ({e.msg}){hint}", n) from None
            items.append(_item(obj, path_str, n))
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            hint = _json_hint(text, suffix, e.msg)
            raise PromptFileError(path_str, f"invalid JSON ({e.msg}){hint}", e.lineno) from None
        if isinstance(data, dict) and isinstance(data.get("data"), list):
            data = data["data"]
        if not isinstance(data, list):
            raise PromptFileError(path_str, "expected a JSON list of prompts or token-id lists")
        items = [_item(obj, path_str, None) for obj in data]
    return items


def truncation_lengths(n: int, max_prompt_tokens: int, seed: int) -> list[int]:
    """kl_test_utils cuts each prompt to int(max * uniform(0.5, 1.5)); we seed the draw."""
    rng = random.Random(seed)
    return [int(max_prompt_tokens * rng.uniform(0.5, 1.5)) for _ in range(n)]


def finalize(
    source: str,
    ids: list[np.ndarray],
    *,
    max_prompt_tokens: int | None,
    seed: int,
    fit_tokens: int | None = None,
) -> PromptSet:
    """Applies the seeded truncation, then (if given) a hard cap so prompts fit the context."""
    out = [np.asarray(x, dtype=np.int64) for x in ids]
    notes = []
    if max_prompt_tokens:
        cuts = truncation_lengths(len(out), max_prompt_tokens, seed)
        out = [x[:c] for x, c in zip(out, cuts, strict=True)]
    if fit_tokens is not None:
        too_long = sum(1 for x in out if x.size > fit_tokens)
        if too_long:
            notes.append(
                f"{too_long} prompt(s) cut to {fit_tokens} tokens to fit the server's context"
            )
            out = [x[:fit_tokens] for x in out]
    empty = [i for i, x in enumerate(out) if x.size == 0]
    if empty:
        raise PromptFileError(source, f"prompt(s) {empty[:5]} are empty after tokenization")
    return PromptSet(source, out, max_prompt_tokens, seed, notes)
