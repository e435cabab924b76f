"""One `kltui check` run in-process against real servers, as the integration tests need it: the
exit code, the JSON result (read through the schema-validating reader) and the console text."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from kltui.outputs.headless import run_check
from kltui.readings.diagnosis import diagnose
from kltui.readings.verdict import Diagnosis
from kltui.run.config import RunConfig
from kltui.session.fold import fold
from kltui.session.recording import read_recording
from kltui.session.store import SessionStore
from tests.json_contract import read_check


async def check_run(
    urls: str | list[str],
    tmp_path: Path,
    *,
    width: int = 240,
    record: str = "r.jsonl",
    run_kw: dict | None = None,
    **cfg,
) -> tuple[int, dict, str]:
    """`kltui check` on `urls` with RunConfig fields `cfg`; `run_kw` goes to run_check."""
    config = RunConfig(servers=[urls] if isinstance(urls, str) else list(urls), **cfg)
    out = io.StringIO()
    rc = await run_check(
        config,
        json_path=str(tmp_path / "r.json"),
        record_path=str(tmp_path / record),
        console=Console(file=out, width=width),
        **(run_kw or {}),
    )
    return rc, read_check(tmp_path / "r.json"), out.getvalue()


def recorded(tmp_path: Path, record: str = "r.jsonl") -> SessionStore:
    """The store of the (last) run check_run recorded: what the readings read."""
    return fold(read_recording(str(tmp_path / record)))[-1]


def recorded_diagnoses(tmp_path: Path, record: str = "r.jsonl") -> list[Diagnosis]:
    """The typed diagnoses of the run check_run recorded (what every view says in words)."""
    return diagnose(recorded(tmp_path, record))
