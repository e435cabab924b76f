"""The sweep folder of `kltui ablate`: what a sweep holds (`Sweep`, one `ConfigRun` per
configuration: its files, how it ended, its time split and its store), its manifest
`ablation.json` (rewritten after each configuration, so a killed sweep keeps what it
measured), and `load`, which reads a folder back: the stores come from the recordings, so a
replay reads exactly what the live sweep read. The sweep itself runs in `run/ablate.py`.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from kltui import __version__
from kltui.ablate.plan import Config
from kltui.errors import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_PASS, EXIT_SERVER, UsageError
from kltui.launch.server import LaunchError, read_tail
from kltui.readings.ablation import Ablation, read
from kltui.readings.stress import is_stressed
from kltui.session.fold import fold
from kltui.session.recording import read_recording
from kltui.session.store import SessionStore
from kltui.untrusted import one_line

MANIFEST = "ablation.json"
FORMAT = "kltui-ablation"
FORMAT_VERSION = 1
TAIL_LINES = 3

MEASURED, FAILED, NOT_RUN, INTERRUPTED = "measured", "failed", "not run", "interrupted"
# the verdicts that say what a setting does (exit 0); the others leave the question open (1)
ANSWERED = ("not reproduced", "localized", "reduced")


# --------------------------------------------------------------------------- one configuration
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+,-]+")


def file_stem(name: str, taken: set[str]) -> str:
    """A configuration's file name in the sweep folder: its name with anything a file name
    should not hold replaced ("--flag=1" -> "flag=1"), unique in the folder."""
    stem = _UNSAFE.sub("_", name).lstrip("-.") or "config"
    out, n = stem, 1
    while out in taken:
        n += 1
        out = f"{stem}-{n}"
    taken.add(out)
    return out


@dataclass
class ConfigRun:
    """One configuration of the sweep: where its files are, how it ended, how long each part
    took (seconds), and its store once measured."""

    config: Config
    stem: str
    status: str = NOT_RUN
    error: str | None = None
    error_kind: str | None = None  # LaunchError.kind, or "run" (kltui could not run helpers)
    url: str | None = None
    verdict: str | None = None
    start_s: float | None = None  # launch to healthy (or to the failure)
    run_s: float | None = None  # the helpers
    stop_s: float | None = None
    store: SessionStore | None = field(default=None, repr=False)
    # --stress: its stressed run read against its quiet one (words/stress.stress_json)
    stress: dict | None = None

    @property
    def name(self) -> str:
        """The configuration's name."""
        return self.config.name

    @property
    def log(self) -> str:
        """Its server's log, in the sweep folder."""
        return f"{self.stem}.log"

    @property
    def recording(self) -> str:
        """Its recording, in the sweep folder."""
        return f"{self.stem}.kltui.jsonl"

    def failed(self, e: LaunchError | str, kind: str = "run") -> None:
        """It did not give a result: `e` is its one line."""
        self.status, self.store = FAILED, None
        self.error = one_line(str(e), 1000)
        self.error_kind = e.kind if isinstance(e, LaunchError) else kind

    def line(self) -> str:
        """How it ended, in one line (server text inside: escape it to show it)."""
        if self.status == MEASURED:
            loud = f"; under --stress: {self.stress['verdict']}" if self.stress else ""
            return f"{self.name}: measured (run verdict {self.verdict}{loud})"
        if self.error:
            return self.error
        return f"{self.name}: {self.status}"

    def to_json(self) -> dict:
        """Its entry in the manifest and in the JSON `sweep` section."""
        return {
            **self.config.to_json(),
            "status": self.status,
            "error": self.error,
            "error_kind": self.error_kind,
            "url": self.url,
            "verdict": self.verdict,
            "log": None if self.config.server else self.log,
            "recording": self.recording,
            "start_s": self.start_s,
            "run_s": self.run_s,
            "stop_s": self.stop_s,
            "stress": self.stress,
        }


@dataclass
class Sweep:
    """A whole sweep: its folder, what was asked, every configuration, the time it took."""

    folder: Path
    mode: str
    launch: tuple[str, ...] = ()
    varies: tuple[str, ...] = ()
    pairs_asked: bool = False
    parallel: int = 1
    skipped: tuple[str, ...] = ()
    runs: list[ConfigRun] = field(default_factory=list)
    pairs_run: bool = False
    interrupted: bool = False
    help_s: float = 0.0
    total_s: float | None = None
    chain: dict | None = None  # `kltui ablate --chain`'s result (dumps/chain.Chain.to_json)
    # the verdict once the sweep ended ({kind, line, exit_code}), for `kltui runs` to list
    # without folding every recording
    verdict: dict | None = None
    created: float = field(default_factory=time.time)
    _t0: float = field(default_factory=time.monotonic, repr=False)
    _stems: set[str] = field(default_factory=set, repr=False)

    def add(self, configs: tuple[Config, ...] | list[Config]) -> list[ConfigRun]:
        """New configurations to run (a name already in the sweep is never added twice)."""
        have = {r.name for r in self.runs}
        new = [ConfigRun(c, file_stem(c.name, self._stems)) for c in configs if c.name not in have]
        self.runs += new
        return new

    @property
    def base(self) -> ConfigRun:
        """The base configuration."""
        return self.runs[0]

    def stores(self) -> dict[str, SessionStore]:
        """Configuration name -> store, for every configuration measured."""
        return {r.name: r.store for r in self.runs if r.store is not None}

    def reading(self) -> Ablation:
        """What the measured configurations show (ablate/reading.read)."""
        return read([r.config for r in self.runs], self.stores(), pairs_run=self.pairs_run)

    def failures(self) -> list[ConfigRun]:
        """The configurations that failed, in sweep order."""
        return [r for r in self.runs if r.status == FAILED]

    def timing(self) -> dict:
        """The time split: server starts and stops, helper runs, --help, and kltui's own (the
        rest of the sweep's wall time) with its share of the total."""

        def total(key: str) -> float:
            return sum(getattr(r, key) or 0.0 for r in self.runs)

        start, run, stop = total("start_s"), total("run_s"), total("stop_s")
        t = self.total_s
        own = None if t is None else max(0.0, t - start - run - stop - self.help_s)
        return {
            "total_s": t,
            "help_s": self.help_s,
            "start_s": start,
            "run_s": run,
            "stop_s": stop,
            "kltui_s": own,
            "kltui_share": None if own is None or not t else own / t,
        }

    def exit_code(self, ablation: Ablation | None = None) -> int:
        """0: the verdict answers the question (localized, reduced, not reproduced); 1: it does
        not (no single knob, inconclusive; for helpers that read differently, the weakest), a
        knob introduces a divergence the base does not have, or --stress found a state bug
        under load; 3: the base did not start or no other configuration was measured; 130:
        interrupted."""
        if self.interrupted:
            return EXIT_INTERRUPTED
        if self.base.status != MEASURED or not any(r.status == MEASURED for r in self.runs[1:]):
            return EXIT_SERVER
        ab = ablation or self.reading()
        if any(
            isinstance(r.stress, dict) and r.stress.get("verdict") == "state bug under load"
            for r in self.runs
            if r.status == MEASURED
        ):
            return EXIT_FAIL  # as `kltui check --stress` fails on one, whatever the quiet verdict
        if ab.verdict.introduced:
            return EXIT_FAIL  # a knob breaks a helper the base passes bit-exact: a finding
        return EXIT_PASS if ab.verdict.kind in ANSWERED else EXIT_FAIL

    def to_json(self) -> dict:
        """The manifest (also the JSON result's `sweep` section)."""
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "kltui_version": __version__,
            "created": self.created,
            "folder": str(self.folder),
            "mode": self.mode,
            "launch": list(self.launch),
            "varies": list(self.varies),
            "pairs": self.pairs_asked,
            "pairs_run": self.pairs_run,
            "parallel": self.parallel,
            "skipped": list(self.skipped),
            "interrupted": self.interrupted,
            "configs": [r.to_json() for r in self.runs],
            "timing": self.timing(),
        }

    def write_manifest(self) -> None:
        """`ablation.json` in the sweep folder, replaced whole (a reader never sees half)."""
        path = self.folder / MANIFEST
        tmp = path.with_name(f".{MANIFEST}.tmp")
        doc = {**self.to_json(), "chain": self.chain, "verdict": self.verdict}
        tmp.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        os.replace(tmp, path)

    def finish(self) -> None:
        """The sweep's wall time and verdict are known: written into the manifest."""
        self.total_s = time.monotonic() - self._t0
        ab = self.reading()
        self.verdict = {
            "kind": ab.verdict.kind,
            "line": ab.verdict.line,
            "exit_code": self.exit_code(ab),
        }
        self.write_manifest()


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
            for key in ("status", "error", "error_kind", "url", "verdict"):
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
