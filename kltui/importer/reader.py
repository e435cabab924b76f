"""Reading an import file as a stream of records: JSONL line by line, Parquet a row batch at a
time (pyarrow, behind the `parquet` extra), a slime `.pt` train dump (torch, loaded with
`weights_only=True` so that loading runs no code).

Memory stays bounded by one batch: nothing here holds the file. A file that cannot be read at
all (no header, an unknown schema version, not Parquet) raises `FileLineError` (one line, exit
2); a record that cannot be used becomes a `BadRecord` in the stream and the records around it
are still read (a truncated last line included), so nothing readable is lost.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from kltui.errors import FileLineError, UsageError
from kltui.importer.adapters import (
    ADAPTERS,
    CHECKED_AGAINST,
    SLIME_FORMAT_VERSIONS,
    sniff,
)
from kltui.importer.schema import FIELDS, FORMAT, BadRecord, Header, Invalid, Record, header_of

ADAPTER_NAMES = ("auto", *ADAPTERS)
PARQUET_BATCH = 512  # rows per pyarrow batch: ~10 MB of a 2k-token file
MAX_ROW_GROUP = 4096  # row groups up to this many rows are read whole (~80 MB at 2k tokens)
PARQUET_META_KEY = b"kltui-rl"

Item = Record | BadRecord


@dataclass
class Source:
    """An open import file: its header, its size, and its records as a stream."""

    path: str
    header: Header
    size: int  # bytes
    total: int | None  # records, where the file says before it is read (Parquet, .pt)
    _items: Iterator[Item] = field(repr=False)
    read_bytes: int = 0  # how far the stream got (progress)

    def items(self) -> Iterator[Item]:
        """Each record, checked, or the one line why it cannot be used, in file order."""
        return self._items


def open_source(path: str, adapter: str = "auto") -> Source:
    """The import file at `path` read with `adapter` (auto: from its header or field names)."""
    if adapter not in ADAPTER_NAMES:
        raise UsageError(f"--format {adapter}: not one of {', '.join(ADAPTER_NAMES)}")
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise FileLineError(path, f"cannot be read ({e.strerror or e})") from None
    lower = path.lower()
    if lower.endswith((".parquet", ".pq")):
        return _parquet(path, adapter, size)
    if lower.endswith(".pt"):
        return _torch(path, adapter, size)
    return _jsonl(path, adapter, size)


# ---------------------------------------------------------------------------------- JSONL
def _lines(path: str) -> Iterator[tuple[int, bytes, bool, int]]:
    """(line number, line, whether it ended with a newline, bytes read), blank lines skipped."""
    done = 0
    with open(path, "rb") as f:
        for no, raw in enumerate(f, start=1):
            done += len(raw)
            ended = raw.endswith(b"\n")
            line = raw.strip()
            if line:
                yield no, line, ended, done


def _parse(path: str, no: int, line: bytes, ended: bool, index: int) -> dict | BadRecord:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        if not ended:
            return BadRecord(path, index, "(record)", "truncated: the file ends inside it", no)
        return BadRecord(path, index, "(record)", f"not valid JSON ({e})", no)
    if not isinstance(obj, dict):
        return BadRecord(path, index, "(record)", f"not a JSON object ({type(obj).__name__})", no)
    return obj


def _jsonl(path: str, adapter: str, size: int) -> Source:
    lines = _lines(path)
    first = next(lines, None)
    if first is None:
        raise FileLineError(path, "is empty: no header line and no records")
    no, line, ended, done = first
    obj = _parse(path, no, line, ended, 0)
    if isinstance(obj, BadRecord):
        raise FileLineError(path, f"the first line is {obj.message}", no)
    pending: dict | None = None
    if "format" in obj:
        if obj["format"] != FORMAT:
            raise FileLineError(
                path, f"format {str(obj['format'])[:40]!r} is not {FORMAT!r} (docs/RL.md)", no
            )
        try:
            header = header_of(path, obj)
        except Invalid as e:
            raise FileLineError(path, f"header: {e.field}: {e.message}", no) from None
        if adapter not in ("auto", FORMAT):
            raise UsageError(f"{path}: a {FORMAT} file, not --format {adapter}")
        use = FORMAT
    else:
        use = adapter if adapter != "auto" else sniff(obj) or ""
        if use == FORMAT or (not use and set(FIELDS[1:4]) & set(obj)):
            raise FileLineError(
                path,
                f'has no header line: a {FORMAT} file starts with {{"format": "{FORMAT}", '
                '"version": 1} (docs/RL.md)',
                no,
            )
        if not use:
            raise FileLineError(
                path,
                "is neither kltui-rl (no header line) nor a verl batch (responses, "
                "old_log_probs, rollout_log_probs) nor a slime dump (tokens, log_probs, "
                f"rollout_log_probs): its first record has {', '.join(sorted(obj)[:8])}",
                no,
            )
        header = Header(path, use, None, CHECKED_AGAINST[use])
        pending = obj
    src = Source(path, header, size, None, iter(()))
    src.read_bytes = done
    src._items = _jsonl_items(src, lines, use, pending, no)
    return src


def _jsonl_items(
    src: Source,
    lines: Iterator[tuple[int, bytes, bool, int]],
    use: str,
    pending: dict | None,
    pending_no: int,
) -> Iterator[Item]:
    convert = ADAPTERS[use]
    index = 0
    if pending is not None:
        index += 1
        yield _record(src.path, convert, pending, index, pending_no)
    for no, line, ended, done in lines:
        index += 1
        src.read_bytes = done
        obj = _parse(src.path, no, line, ended, index)
        yield obj if isinstance(obj, BadRecord) else _record(src.path, convert, obj, index, no)


def _record(path: str, convert, obj: Mapping[str, Any], index: int, line: int | None) -> Item:
    try:
        return convert(obj, index)
    except Invalid as e:
        return BadRecord(path, index, e.field, e.message, line)


# -------------------------------------------------------------------------------- Parquet
def _parquet(path: str, adapter: str, size: int) -> Source:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError(
            f"{path}: reading Parquet needs pyarrow: pip install 'kltui[parquet]'"
        ) from None
    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # pyarrow's ArrowInvalid and friends: the file is not readable
        raise FileLineError(
            path,
            f"is not a readable Parquet file ({str(e)[:120]}); a Parquet file is read from "
            "its footer, so a truncated one has no readable records",
        ) from None
    meta = pf.schema_arrow.metadata or {}
    names = set(pf.schema_arrow.names)
    if PARQUET_META_KEY in meta:
        try:
            obj = orjson.loads(meta[PARQUET_META_KEY])
            header = header_of(path, obj if isinstance(obj, dict) else {})
        except orjson.JSONDecodeError:
            raise FileLineError(path, "metadata kltui-rl is not a JSON object") from None
        except Invalid as e:
            raise FileLineError(path, f"metadata kltui-rl: {e.field}: {e.message}") from None
        use = FORMAT
    else:
        use = adapter if adapter != "auto" else sniff(names) or ""
        if not use or use == FORMAT:
            raise FileLineError(
                path,
                f"has no kltui-rl metadata (key {PARQUET_META_KEY.decode()}) and its columns "
                f"are neither verl's nor slime's: {', '.join(sorted(names)[:8])}",
            )
        header = Header(path, use, None, CHECKED_AGAINST[use])
    src = Source(path, header, size, pf.metadata.num_rows, iter(()))
    src._items = _parquet_items(src, pf, use)
    return src


def _column(col: Any) -> tuple[np.ndarray, np.ndarray] | list:
    """A list column as (flat values, offsets), or a plain column as a Python list."""
    import pyarrow as pa

    if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
        if col.null_count:
            col = col.fill_null([])
        flat = col.flatten()
        values = flat.to_numpy(zero_copy_only=False)
        if pa.types.is_integer(flat.type) and flat.null_count:
            values = flat.cast(pa.float64()).to_numpy(zero_copy_only=False)
        offsets = col.offsets.to_numpy()
        return values, offsets - offsets[0]
    return col.to_pylist()


def _batches(pf: Any) -> Iterator[Any]:
    """The file's rows a bounded batch at a time: whole row groups where they are small (pyarrow
    decodes a row group's columns in parallel, ~1.7x faster here than iter_batches), else
    PARQUET_BATCH rows at a time."""
    meta = pf.metadata
    groups = meta.num_row_groups
    if not all(meta.row_group(i).num_rows <= MAX_ROW_GROUP for i in range(groups)):
        yield from pf.iter_batches(batch_size=PARQUET_BATCH)
        return
    # the next row group is decoded in a thread while this one is scored (pyarrow and numpy
    # both release the GIL): two cores overlap reading and arithmetic; at most two groups held
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kltui-parquet") as pool:
        ahead = pool.submit(pf.read_row_group, 0) if groups else None
        for i in range(groups):
            assert ahead is not None
            table = ahead.result()
            ahead = pool.submit(pf.read_row_group, i + 1) if i + 1 < groups else None
            yield from table.to_batches()


def _parquet_items(src: Source, pf: Any, use: str) -> Iterator[Item]:
    convert = ADAPTERS[use]
    index = 0
    try:
        for batch in _batches(pf):
            cols = {name: _column(batch.column(name)) for name in batch.schema.names}
            for row in range(batch.num_rows):
                index += 1
                obj: dict[str, Any] = {}
                for name, col in cols.items():
                    if isinstance(col, tuple):
                        values, offsets = col
                        obj[name] = values[offsets[row] : offsets[row + 1]]
                    else:
                        obj[name] = col[row]
                yield _record(src.path, convert, obj, index, None)
            src.read_bytes = int(src.size * index / max(1, src.total or index))
    except OSError as e:
        yield BadRecord(src.path, index + 1, "(row group)", f"cannot be read ({str(e)[:160]})")


# -------------------------------------------------------------------------- slime's .pt
def _torch(path: str, adapter: str, size: int) -> Source:
    if adapter not in ("auto", "slime"):
        raise UsageError(
            f"{path}: a .pt file is read as a slime train dump, not --format {adapter}"
        )
    try:
        import torch
    except ImportError:
        raise UsageError(f"{path}: reading a slime .pt dump needs torch") from None
    try:
        data = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as e:  # unpickling refused, truncated zip, ...: one line
        raise FileLineError(
            path,
            f"cannot be loaded with torch.load(weights_only=True) ({str(e).splitlines()[0][:160]}); "
            "slime's train dumps (--save-debug-train-data) load that way, its rollout dumps "
            "do not and hold no trainer logprobs",
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("samples"), list):
        raise FileLineError(path, "is not a slime dump: no list under 'samples'")
    version = data.get("format_version")
    if version is None and data["samples"] and "response_length" in data["samples"][0]:
        version = "rollout dump"
    if version not in SLIME_FORMAT_VERSIONS:
        raise FileLineError(
            path,
            f"format_version {version!r} is not a slime train dump kltui knows "
            f"({', '.join(map(str, SLIME_FORMAT_VERSIONS))}; checked against "
            f"{CHECKED_AGAINST['slime']})",
        )
    samples = data["samples"]
    header = Header(
        path, "slime", None, CHECKED_AGAINST["slime"], {"rollout_id": data.get("rollout_id")}
    )
    src = Source(path, header, size, len(samples), iter(()))
    src._items = _pt_items(src, samples, data.get("rollout_id"))
    return src


def _pt_items(src: Source, samples: list, rollout_id: Any) -> Iterator[Item]:
    convert = ADAPTERS["slime"]
    for index, sample in enumerate(samples, start=1):
        if not isinstance(sample, dict):
            yield BadRecord(src.path, index, "(sample)", "not a dict")
            continue
        if rollout_id is not None and "rollout_id" not in sample:
            sample = {**sample, "rollout_id": rollout_id}
        yield _record(src.path, convert, sample, index, None)
        src.read_bytes = int(src.size * index / max(1, len(samples)))
