"""What a sweep of `kltui ablate` holds (`Sweep`, one `ConfigRun` per configuration: its
files, how it ended, its time split and its store) and its manifest document `ablation.json`
(`Sweep.manifest`). Data only: run/ablate.py runs the sweep and writes the manifest
(run/sweep_manifest.py: the file, `load`), readings/ablation_outcome.py reads it (the reading,
the exit code, the timing, once), words/ablation_sweep.py says it.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kltui import __version__
from kltui.ablate.plan import Config
from kltui.session.store import SessionStore
from kltui.untrusted import one_line

MANIFEST = "ablation.json"
FORMAT = "kltui-ablation"
FORMAT_VERSION = 1
TAIL_LINES = 3


class ConfigStatus(StrEnum):
    """How a configuration of the sweep ended (the manifest's `status`)."""

    MEASURED = "measured"
    FAILED = "failed"  # its server did not start, or kltui could not run its helpers
    NOT_RUN = "not run"
    INTERRUPTED = "interrupted"  # cut short: never a result


MEASURED, FAILED = ConfigStatus.MEASURED, ConfigStatus.FAILED
NOT_RUN, INTERRUPTED = ConfigStatus.NOT_RUN, ConfigStatus.INTERRUPTED


@dataclass(frozen=True)
class Timing:
    """Where a sweep's wall time went (seconds): server starts and stops, helper runs,
    --help, and kltui's own (the rest)."""

    total_s: float | None
    help_s: float
    start_s: float
    run_s: float
    stop_s: float
    kltui_s: float | None

    @property
    def kltui_share(self) -> float | None:
        """kltui's own share of the total."""
        t = self.total_s
        return None if self.kltui_s is None or not t else self.kltui_s / t

    def to_json(self) -> dict[str, Any]:
        """The manifest's `timing`."""
        return {
            "total_s": self.total_s,
            "help_s": self.help_s,
            "start_s": self.start_s,
            "run_s": self.run_s,
            "stop_s": self.stop_s,
            "kltui_s": self.kltui_s,
            "kltui_share": self.kltui_share,
        }


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
    status: ConfigStatus = NOT_RUN
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

    def failed(self, e: object, kind: str = "run") -> None:
        """It did not give a result: `e` is its one line (a LaunchError names its own kind)."""
        self.status, self.store = FAILED, None
        self.error = one_line(str(e), 1000)
        self.error_kind = str(getattr(e, "kind", None) or kind)

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

    def failures(self) -> list[ConfigRun]:
        """The configurations that failed, in sweep order."""
        return [r for r in self.runs if r.status == FAILED]

    def timing(self) -> Timing:
        """The time split: server starts and stops, helper runs, --help, and kltui's own (the
        rest of the sweep's wall time)."""

        def total(key: str) -> float:
            return sum(getattr(r, key) or 0.0 for r in self.runs)

        start, run, stop = total("start_s"), total("run_s"), total("stop_s")
        t = self.total_s
        own = None if t is None else max(0.0, t - start - run - stop - self.help_s)
        return Timing(t, self.help_s, start, run, stop, own)

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
            "timing": self.timing().to_json(),
        }

    def manifest(self) -> dict:
        """The manifest `ablation.json` as it stands: the sweep, its chain and its verdict."""
        return {**self.to_json(), "chain": self.chain, "verdict": self.verdict}

    def end(self) -> None:
        """The sweep's wall time is known."""
        self.total_s = time.monotonic() - self._t0
