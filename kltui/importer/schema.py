"""The import schema `kltui-rl` (docs/RL.md): one record per sample with the rollout engine's
and the trainer's logprobs of the same response tokens.

Version 1. A JSONL file starts with a header line
`{"format": "kltui-rl", "version": 1, "model": ..., "engine": ..., "trainer": ...}` (every key
but `format` and `version` optional); each further line is one record:

    prompt_ids        [int]    the prompt's token ids (may be empty)
    response_ids      [int]    the generated token ids, n of them
    rollout_logprobs  [float]  n logprobs the rollout engine gave response_ids
    trainer_logprobs  [float]  n logprobs the trainer recomputed for the same tokens
    loss_mask         [0|1]    optional, n entries: the tokens that count (1); default all
    id, step, meta             optional: a sample id, the training step, any JSON object

A Parquet file has the same columns, and the header's keys in its key-value metadata under
`kltui-rl` (a JSON object with `format` and `version`).

Everything here is pure: records in, checked records or one-line problems out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FORMAT = "kltui-rl"
VERSION = 1
SUPPORTED_VERSIONS = (1,)
# a logprob above this is > 0 beyond rounding (the same tolerance as metrics/protocol.py)
POSITIVE_TOLERANCE = 1e-6

FIELDS = ("prompt_ids", "response_ids", "rollout_logprobs", "trainer_logprobs", "loss_mask")
HEADER_KEYS = ("model", "engine", "trainer", "tokenizer", "note")


@dataclass(frozen=True, slots=True)
class Header:
    """What a file says about itself: its format, version, adapter and metadata."""

    path: str
    adapter: str  # kltui-rl | verl | slime
    version: int | None = None  # kltui-rl's schema version (None for an adapter's file)
    source_version: str = ""  # what the adapter was checked against (docs/RL.md)
    meta: dict[str, Any] = field(default_factory=dict)  # model, engine, trainer, ... (untrusted)


@dataclass(frozen=True, slots=True)
class Record:
    """One checked sample: arrays of equal length n, the mask covering at least one token."""

    index: int  # record number in the file, 1-based
    prompt_ids: np.ndarray  # integers
    response_ids: np.ndarray  # integers, n
    rollout: np.ndarray  # floats (float64, or a Parquet file's float32), n
    trainer: np.ndarray  # floats, n
    mask: np.ndarray  # bool, n
    sample_id: str | None = None
    step: int | None = None

    @property
    def n(self) -> int:
        """Response tokens."""
        return int(self.response_ids.size)

    def owned(self) -> Record:
        """The record with arrays of its own: a Parquet record's arrays are views into its whole
        row group, which a kept record would otherwise hold in memory."""
        return Record(
            self.index,
            self.prompt_ids.copy(),
            self.response_ids.copy(),
            self.rollout.copy(),
            self.trainer.copy(),
            self.mask.copy(),
            self.sample_id,
            self.step,
        )


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A record that cannot be used: file, record number, field and what is wrong."""

    path: str
    index: int  # 1-based record number (0: the file as a whole)
    field: str
    message: str
    line: int | None = None  # the file's line number where it has lines

    @property
    def detail(self) -> str:
        """The line without the file's name (where the file is named already)."""
        where = f"record {self.index}" if self.index else "file"
        if self.line is not None and self.line != self.index:
            where += f" (line {self.line})"
        return f"{where}: {self.field}: {self.message}"

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


class Invalid(Exception):
    """A record's field is unusable; the reader turns it into a BadRecord."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


def header_of(path: str, obj: dict[str, Any]) -> Header:
    """The header of a kltui-rl file; Invalid for another format or an unknown version."""
    version = obj.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise Invalid("version", f"must be an integer schema version, got {version!r:.40}")
    if version not in SUPPORTED_VERSIONS:
        known = ", ".join(map(str, SUPPORTED_VERSIONS))
        raise Invalid(
            "version",
            f"schema version {version} is not known to this kltui (it reads {known}); "
            "upgrade kltui or write version 1 (docs/RL.md)",
        )
    meta = {k: obj[k] for k in HEADER_KEYS if k in obj}
    return Header(path, FORMAT, version, f"{FORMAT}/{version}", meta)


def int_array(value: Any, name: str) -> np.ndarray:
    """A list of token ids as int64; Invalid when it is not one."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        arr = value  # a Parquet column's slice: kept in its own integer type, not copied
    elif not isinstance(value, list | np.ndarray):
        raise Invalid(name, f"must be a list of token ids, got {type(value).__name__}")
    else:
        try:
            arr = np.asarray(value, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            raise Invalid(name, "must hold integer token ids only") from None
    if arr.ndim != 1:
        raise Invalid(name, "must be a flat list")
    if arr.size and int(arr.min()) < 0:
        raise Invalid(name, f"token id {int(arr.min())} is negative")
    return arr


def float_array(value: Any, name: str) -> np.ndarray:
    """A list of logprobs as floats (JSON null reads as NaN; a float32 column stays float32,
    converted where the metrics concatenate); Invalid when it is not one."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.ndim == 1:
        return value
    if not isinstance(value, list | np.ndarray):
        raise Invalid(name, f"must be a list of logprobs, got {type(value).__name__}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        # JSON null: a NaN the check below names, instead of a type error
        try:
            arr = np.asarray([math.nan if v is None else v for v in value], dtype=np.float64)
        except (TypeError, ValueError):
            raise Invalid(name, "must hold numbers only") from None
    if arr.ndim != 1:
        raise Invalid(name, "must be a flat list")
    return arr


def check(
    index: int,
    prompt_ids: np.ndarray,
    response_ids: np.ndarray,
    rollout: np.ndarray,
    trainer: np.ndarray,
    mask: np.ndarray | None,
    *,
    names: tuple[str, str, str, str] = FIELDS[1:],
    sample_id: str | None = None,
    step: int | None = None,
) -> Record:
    """The record, checked: equal lengths, a mask that covers something, and finite logprobs
    <= 0 wherever the mask counts (outside it trainers pad with anything). `names` are the
    file's own names of response ids, rollout and trainer logprobs and the mask, for messages."""
    ids_name, roll_name, train_name, mask_name = names
    n = int(response_ids.size)
    if n == 0:
        raise Invalid(ids_name, "is empty: a record needs at least one response token")
    for arr, name in ((rollout, roll_name), (trainer, train_name)):
        if arr.size != n:
            raise Invalid(name, f"has {arr.size} logprobs for {n} {ids_name}")
    if mask is None:
        keep = np.ones(n, dtype=bool)
    else:
        if mask.size != n:
            raise Invalid(mask_name, f"has {mask.size} entries for {n} {ids_name}")
        keep = np.asarray(mask) != 0
        if not keep.any():
            raise Invalid(mask_name, f"covers none of the {n} tokens (every entry is 0)")
    for arr, name in ((rollout, roll_name), (trainer, train_name)):
        counted = arr if mask is None or keep.all() else arr[keep]
        # the common case in two reductions: NaN makes max NaN, so it fails `<=` too
        if counted.max() <= POSITIVE_TOLERANCE and counted.min() > -np.inf:
            continue
        bad = ~np.isfinite(counted)
        if bad.any():
            pos = int(np.flatnonzero(keep)[np.argmax(bad)])
            raise Invalid(
                name,
                f"{int(bad.sum())} counted logprob(s) are NaN or infinite "
                f"(first at position {pos}: {float(arr[pos])})",
            )
        above = counted > POSITIVE_TOLERANCE
        if above.any():
            pos = int(np.flatnonzero(keep)[np.argmax(above)])
            raise Invalid(
                name,
                f"{int(above.sum())} counted logprob(s) are above 0, which no probability "
                f"gives (first at position {pos}: {arr[pos]:+.6g})",
            )
    return Record(
        index, prompt_ids, response_ids, rollout, trainer, keep, sample_id=sample_id, step=step
    )


def optional_step(value: Any) -> int | None:
    """A record's training step (None when absent); Invalid when it is not an integer."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise Invalid("step", f"must be an integer, got {value!r:.40}")
    return int(value)


def optional_id(value: Any) -> str | None:
    """A record's sample id as text (None when absent)."""
    if value is None:
        return None
    if isinstance(value, str | int) and not isinstance(value, bool):
        return str(value)
    raise Invalid("id", f"must be a string or an integer, got {type(value).__name__}")
