"""One pass over an import file before its records are read: how many records it holds (the
progress bar's end) and its SHA-256 (the run's identity of the file)."""

from __future__ import annotations

import hashlib
import os

import numpy as np

HASH_WHOLE = 256 << 20  # files up to this size are hashed whole; bigger ones by their ends
HASH_ENDS = 8 << 20


def scan(path: str, jsonl: bool, header_line: bool) -> tuple[int | None, str, str]:
    """For JSONL its records (non-blank lines, less the header line where the file has one: a
    kltui-rl file does, a verl or slime JSONL file does not), so the progress bar and the
    console's first line know its end, in one pass of 16 MB reads (a line of spaces alone still
    counts); and the file's SHA-256 with what it covers: the
    whole file up to HASH_WHOLE, else its size and first and last HASH_ENDS bytes (so a big
    Parquet file is not read twice before the dashboard fills in)."""
    size = os.path.getsize(path)
    whole = size <= HASH_WHOLE
    lines, blank, last = 0, 0, b"\n"
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        if not whole:
            digest.update(str(size).encode() + b"\0" + f.read(HASH_ENDS))
            f.seek(size - HASH_ENDS)
            digest.update(f.read(HASH_ENDS))
            f.seek(0)
        if whole or jsonl:
            while buf := f.read(1 << 24):
                if whole:
                    digest.update(buf)
                if jsonl:
                    lines += buf.count(b"\n")
                    blank += _blank_lines(buf) + (last == b"\n" and buf[:1] == b"\n")
                    last = buf[-1:]
    count = max(0, lines + (last != b"\n") - blank - header_line) if jsonl else None
    covers = "the whole file" if whole else f"the size and the first and last {HASH_ENDS >> 20} MB"
    return count, digest.hexdigest(), covers


def _blank_lines(buf: bytes) -> int:
    """Empty lines inside `buf`: each newline that follows a newline (overlapping: 3 in a row
    are 2 empty lines)."""
    if b"\n\n" not in buf:
        return 0
    nl = np.frombuffer(buf, dtype=np.uint8) == 10
    return int(np.count_nonzero(nl[1:] & nl[:-1]))
