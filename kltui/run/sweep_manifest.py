"""The sweep folder of `kltui ablate` on disk: its manifest `ablation.json` (rewritten after
each configuration, so a killed sweep keeps what it measured) and `load`, which reads a folder
back: the stores come from the recordings, so a replay reads exactly what the live sweep read.
What a sweep holds is ablate/sweep.py's; the sweep itself runs in `run/ablate.py`.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from kltui.ablate.plan import Config
from kltui.ablate.sweep import (
    FAILED,
    FORMAT,
    FORMAT_VERSION,
    INTERRUPTED,
    MANIFEST,
    MEASURED,
    NOT_RUN,
    TAIL_LINES,
    ConfigRun,
    ConfigStatus,
    Sweep,
    file_stem,
)
from kltui.errors import UsageError
from kltui.launch.server import read_tail
from kltui.readings.stress import is_stressed
from kltui.session.fold import fold
from kltui.session.jsonfile import replace_json
from kltui.session.recording import read_recording
from kltui.untrusted import one_line

__all__ = [
    "FAILED", "INTERRUPTED", "MANIFEST", "MEASURED", "NOT_RUN", "TAIL_LINES", "ConfigRun",
    "Sweep", "file_stem", "load", "log_tail", "write_manifest",
]  # fmt: skip


def write_manifest(sweep: Sweep) -> None:
    """`ablation.json` in the sweep folder as the sweep stands (its verdict's words are
    added once it ended, by outputs/ablation.finish)."""
    replace_json(sweep.folder / MANIFEST, sweep.manifest())


# --------------------------------------------------------------------------- replay
def _config_of(d: dict) -> Config:
    return Config(
        str(d["name"]),
        {str(k): str(v) for k, v in (d.get("changes") or {}).items()},
        tuple(str(w) for w in d.get("argv") or ()),
        d.get("server"),
        tuple(str(u) for u in d.get("unknown") or ()),
    )


def load(folder: str | Path) -> Sweep:
    """A sweep folder read back: its manifest, and each measured configuration's store folded
    from its recording (UsageError naming the file when one cannot be read)."""
    root = Path(folder)
    path = root / MANIFEST
    try:
        doc = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise UsageError(f"{path}: no sweep manifest (is this a kltui ablate folder?)") from None
    except (OSError, orjson.JSONDecodeError) as e:
        raise UsageError(
            f"{path}: cannot read the sweep manifest ({one_line(str(e), 200)})"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise UsageError(f"{path}: not a kltui ablate manifest")
    if not isinstance(doc.get("version"), int) or doc["version"] > FORMAT_VERSION:
        raise UsageError(f"{path}: written by a newer kltui (format {doc.get('version')!r})")
    try:
        sweep = Sweep(
            Path(doc["folder"]),
            str(doc["mode"]),
            tuple(doc.get("launch") or ()),
            tuple(doc.get("varies") or ()),
            bool(doc.get("pairs")),
            int(doc.get("parallel") or 1),
            tuple(doc.get("skipped") or ()),
            pairs_run=bool(doc.get("pairs_run")),
            interrupted=bool(doc.get("interrupted")),
            help_s=float(doc.get("timing", {}).get("help_s") or 0.0),
            total_s=doc.get("timing", {}).get("total_s"),
            created=float(doc.get("created") or 0.0),
            chain=doc.get("chain") if isinstance(doc.get("chain"), dict) else None,
            verdict=doc.get("verdict") if isinstance(doc.get("verdict"), dict) else None,
        )
        for d in doc["configs"]:
            r = ConfigRun(
                _config_of(d), Path(str(d["recording"])).name.removesuffix(".kltui.jsonl")
            )
            r.status = ConfigStatus(d.get("status", NOT_RUN))  # another word: malformed
            for key in ("error", "error_kind", "url", "verdict"):
                setattr(r, key, d.get(key))
            for key in ("start_s", "run_s", "stop_s"):
                setattr(r, key, d.get(key))
            r.stress = d["stress"] if isinstance(d.get("stress"), dict) else None
            sweep.runs.append(r)
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{path}: a malformed sweep manifest ({one_line(repr(e), 200)})") from None
    if not sweep.runs:
        raise UsageError(f"{path}: the manifest names no configuration")
    for r in sweep.runs:
        if r.status == MEASURED:
            # with --stress the recording holds the quiet run, then the stressed one: the
            # configuration's result is the quiet run, as it was live
            stores = fold(read_recording(str(root / r.recording)))
            quiet = [st for st in stores if not is_stressed(st)]
            r.store = (quiet or stores)[-1] if stores else None
            if r.store is None:
                raise UsageError(f"{root / r.recording}: the recording holds no run")
    return sweep


def log_tail(sweep: Sweep, run: ConfigRun, n: int = TAIL_LINES) -> list[str]:
    """The last lines of a configuration's server log (raw server text)."""
    return [] if run.config.server else read_tail(sweep.folder / run.log, n)
