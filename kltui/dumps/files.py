"""The dumper's files: `step=S___rank=R___dump_index=I___name=NAME___recompute_status=...
[___layer_id=L...].pt`, each a `torch.save` of `{"value": ..., "meta": {...}}` (dumper.py,
`_dump_single`, SGLang 0.5.17 and 0.5.23 alike). Files are untrusted: loaded with
`weights_only=True`, and any that fails to load is named, never skipped."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kltui.errors import UsageError

# Tags every file carries; the rest (layer_id, parallel ranks, ...) tell repeated calls apart.
FIXED_TAGS = ("step", "rank", "dump_index", "name", "recompute_status")


class DumpError(UsageError):
    """A dump folder or file that cannot be analysed (exit 2): the message names it."""


@dataclass(frozen=True)
class DumpFile:
    """One dump file and the fields of its name."""

    path: Path
    step: int
    rank: int
    dump_index: int
    name: str
    tags: tuple[tuple[str, str], ...]

    @property
    def label(self) -> str:
        """The tensor's name with its tags, as shown."""
        extra = ",".join(f"{k}={v}" for k, v in self.tags)
        return f"{self.name}[{extra}]" if extra else self.name


def parse_filename(fname: str) -> DumpFile | None:
    """The fields of a dumper file name, or None when it is not one."""
    if not fname.endswith(".pt"):
        return None
    fields: dict[str, str] = {}
    for part in fname[:-3].split("___"):
        key, sep, value = part.partition("=")
        if not sep or key in fields:
            return None
        fields[key] = value
    try:
        step, rank, index = int(fields["step"]), int(fields["rank"]), int(fields["dump_index"])
        name = fields["name"]
    except (KeyError, ValueError):
        return None
    tags = tuple(sorted((k, v) for k, v in fields.items() if k not in FIXED_TAGS))
    return DumpFile(Path(fname), step, rank, index, name, tags)


def index_folder(folder: str | Path) -> list[DumpFile]:
    """Every dumper file of one experiment folder (exp_name), sorted by (rank, dump_index)."""
    root = Path(folder)
    if not root.is_dir():
        raise DumpError(f"{root}: not a folder")
    out = []
    for p in sorted(root.iterdir()):
        if not p.name.endswith(".pt"):
            continue
        df = parse_filename(p.name)
        if df is None:
            raise DumpError(f"{p}: not a dumper file name (step=..___rank=..___dump_index=..)")
        out.append(DumpFile(p, df.step, df.rank, df.dump_index, df.name, df.tags))
    if not out:
        subs = sorted(d.name for d in root.iterdir() if d.is_dir() and any(d.glob("*.pt")))
        hint = f"; its subfolders {', '.join(subs[:4])} do: pass those" if subs else ""
        raise DumpError(f"{root}: no dump files (*.pt){hint}")
    out.sort(key=lambda d: (d.rank, d.dump_index))
    seen: dict[tuple[int, int], DumpFile] = {}
    for d in out:
        if (d.rank, d.dump_index) in seen:
            raise DumpError(
                f"{d.path}: dump_index {d.dump_index} also in {seen[d.rank, d.dump_index].path.name}"
                " (two experiments mixed in one folder?)"
            )
        seen[d.rank, d.dump_index] = d
    return out


def require_torch():
    """The torch module, or a DumpError saying how to install it."""
    try:
        import torch
    except ImportError:
        raise DumpError(
            "reading dumps needs torch: pip install 'kltui[reference]' (or any torch)"
        ) from None
    return torch


class Loader:
    """Loads values on first use and keeps them: each file is read once per analysis."""

    def __init__(self) -> None:
        self.torch = require_torch()
        self._cache: dict[Path, object] = {}

    def value(self, df: DumpFile):
        """The tensor of a dump file, loaded once."""
        if df.path not in self._cache:
            self._cache[df.path] = self._load(df.path)
        return self._cache[df.path]

    def _load(self, path: Path):
        try:
            obj = self.torch.load(path, map_location="cpu", weights_only=True)
        except FileNotFoundError:
            raise DumpError(f"{path}: dump file missing (removed while reading?)") from None
        except Exception as e:  # torch raises many types for a cut or foreign file
            raise DumpError(
                f"{path}: truncated or unreadable dump file ({type(e).__name__})"
            ) from None
        if not isinstance(obj, dict) or "value" not in obj:
            raise DumpError(f"{path}: not a dumper file (no 'value' entry)")
        return obj["value"]
