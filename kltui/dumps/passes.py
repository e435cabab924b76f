"""Forward passes as the dumper recorded them. The dumper's `step` counts forward passes; in
non-intrusive mode the root module's ForwardBatch gives each pass its core fields (`input_ids`,
`positions`, `seq_lens`, `rids`) and every module's pre/post hooks give
`non_intrusive__<module>.inputs.<arg>` and `non_intrusive__<module>.output[.<i>]`, written in
execution order (dump_index)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kltui.dumps.files import DumpError, DumpFile, Loader

PREFIX = "non_intrusive__"
CORE = ("input_ids", "positions", "seq_lens", "req_pool_indices", "rids")


def split_name(name: str) -> tuple[str, str]:
    """(module, kind) of a dump name; kind is "input", "output" or "dump" (an explicit
    `dumper.dump(name, ...)` call in model code, compared as its own module)."""
    if not name.startswith(PREFIX):
        return name, "dump"
    parts = name[len(PREFIX) :].split(".")
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] in ("inputs", "output") and len(parts) - i <= 3:
            return ".".join(parts[:i]), "input" if parts[i] == "inputs" else "output"
    return name[len(PREFIX) :], "dump"


@dataclass
class Entry:
    """One dumped tensor of a forward pass and the module it belongs to."""

    key: tuple  # (name, tags, occurrence): what pairs a file with its counterpart elsewhere
    file: DumpFile
    module: str
    kind: str
    occurrence: int

    @property
    def label(self) -> str:
        """The tensor's name as shown."""
        base = self.file.label.removeprefix(PREFIX)
        return f"{base}#{self.occurrence}" if self.occurrence else base

    @property
    def module_key(self) -> tuple:
        """What pairs this module's tensors across passes."""
        return (self.module, self.file.tags, self.occurrence)

    @property
    def module_label(self) -> str:
        """The module's name with its tags, as shown."""
        tags = ",".join(f"{k}={v}" for k, v in self.file.tags if k != "layer_id")
        mod = self.module or "(root)"
        out = f"{mod}[{tags}]" if tags else mod
        return f"{out}#{self.occurrence}" if self.occurrence else out


@dataclass
class Pass:
    """One forward pass on one rank: its positions, input ids and dumped tensors."""

    step: int
    rank: int
    positions: np.ndarray
    input_ids: np.ndarray
    rids: list[str] | None
    n_reqs: int
    entries: dict[tuple, Entry] = field(default_factory=dict)
    rows: dict[int, int] = field(default_factory=dict)  # position -> row

    @property
    def tokens(self) -> int:
        """The number of tokens in the pass."""
        return int(self.positions.size)


def _as_ids(value, what: str, df: DumpFile) -> np.ndarray:
    try:
        arr = value.detach().to("cpu").reshape(-1).numpy()
    except AttributeError:
        raise DumpError(f"{df.path}: {what} is not a tensor") from None
    return arr.astype(np.int64)


def build_passes(files: list[DumpFile], loader: Loader, where: str) -> dict[int, list[Pass]]:
    """{rank: [Pass, ...] by step}. Every pass must carry its core fields."""
    by_step: dict[tuple[int, int], list[DumpFile]] = {}
    for df in files:
        by_step.setdefault((df.rank, df.step), []).append(df)
    out: dict[int, list[Pass]] = {}
    for (rank, step), group in sorted(by_step.items()):
        core: dict[str, DumpFile] = {}
        for d in group:
            # The root's ForwardBatch comes first; attention layers pass `positions` again
            # (with a layer_id tag), which the dumper also files under the core name.
            if d.name in CORE and d.name not in core:
                core[d.name] = d
        for need in ("positions", "input_ids"):
            if need not in core:
                raise DumpError(
                    f"{where}: step {step} rank {rank} has no '{need}' dump (core fields come "
                    "from the root module's ForwardBatch; files missing?)"
                )
        positions = _as_ids(loader.value(core["positions"]), "positions", core["positions"])
        input_ids = _as_ids(loader.value(core["input_ids"]), "input_ids", core["input_ids"])
        if input_ids.size != positions.size:
            raise DumpError(
                f"{where}: step {step}: {input_ids.size} input_ids but {positions.size} positions"
            )
        rids = None
        if "rids" in core:
            raw = loader.value(core["rids"])
            rids = [str(r) for r in raw] if isinstance(raw, (list, tuple)) else None
        if "seq_lens" in core:
            n_reqs = int(loader.value(core["seq_lens"]).numel())
        else:
            n_reqs = len(rids) if rids is not None else 1
        p = Pass(step, rank, positions, input_ids, rids, n_reqs)
        p.rows = {pos: row for row, pos in enumerate(positions.tolist())}
        seen: dict[tuple, int] = {}
        for d in group:
            if d.name in CORE:
                continue
            module, kind = split_name(d.name)
            occ = seen.get((d.name, d.tags), 0)
            seen[(d.name, d.tags)] = occ + 1
            key = (d.name, d.tags, occ)
            p.entries[key] = Entry(key, d, module, kind, occ)
        out.setdefault(rank, []).append(p)
    for rank, passes in out.items():
        steps = [p.step for p in passes]
        gaps = sorted(set(range(steps[0], steps[-1] + 1)) - set(steps))
        if gaps:
            raise DumpError(
                f"{where}: rank {rank} has steps {steps[0]}..{steps[-1]} but no files of step "
                f"{gaps[0]} (missing dumps)"
            )
    return out


def position_map(passes: list[Pass], where: str) -> dict[int, tuple[Pass, int]]:
    """{position: (pass, row)}; a position computed twice means two requests were mixed."""
    out: dict[int, tuple[Pass, int]] = {}
    for p in passes:
        for row, pos in enumerate(p.positions.tolist()):
            if pos in out:
                raise DumpError(
                    f"{where}: position {pos} is computed in step {out[pos][0].step} and again "
                    f"in step {p.step}: more than one request was dumped"
                )
            out[pos] = (p, row)
    return out


class NotIdle(DumpError):
    """Other requests were batched into the dumped passes."""


def check_single_request(passes: list[Pass], where: str) -> str | None:
    """The rid every pass ran; a pass that batched several requests (or a second rid) means
    other requests interleaved with the dumped ones, and rows cannot be attributed."""
    rid = None
    for p in passes:
        if p.n_reqs != 1 or (p.rids is not None and len(p.rids) != 1):
            others = ", ".join(p.rids or []) or f"{p.n_reqs} requests"
            raise NotIdle(
                f"{where}: step {p.step} batched {p.n_reqs} requests ({others}): the server was "
                "not idle while dumping"
            )
        if p.rids:
            if rid is not None and p.rids[0] != rid:
                raise NotIdle(
                    f"{where}: step {p.step} ran request {p.rids[0]!r} but earlier steps ran "
                    f"{rid!r}: the server was not idle while dumping"
                )
            rid = p.rids[0]
    return rid


def row_of(value, p: Pass, position: int) -> int | None:
    """Row of `value` that holds `position` in pass `p`, or None when the tensor is not laid out
    one row per token (a last-token-only tensor such as next_token_logits maps its single row to
    the pass's last position)."""
    shape = getattr(value, "shape", None)
    if shape is None or len(shape) == 0:
        return None
    row = p.rows.get(position)
    if row is None:
        return None
    if shape[0] == p.tokens:
        return row
    if shape[0] == 1 and p.n_reqs == 1 and int(p.positions[-1]) == position:
        return 0
    return None
