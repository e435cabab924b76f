"""The device scripts' mechanics on CPU (bench/gpu_dryrun.sh): a fault in them costs a device
call of a 30-minute budget, as `timeout kltui ...` (a shell function) did once. The reference
server stands in for SGLang; the chain runs and stops at the dumper relaunch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_device_script_parses():
    for script in sorted((REPO / "bench").glob("gpu_*.sh")):
        r = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert r.returncode == 0, f"{script.name}: {r.stderr}"


def test_gpu_migration_ablate_runs_its_chain_on_the_reference_server():
    r = subprocess.run(
        ["bash", str(REPO / "bench" / "gpu_dryrun.sh")],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYX": sys.executable, "HOME": str(Path.home())},
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "dry run: bench/gpu_migration.sh ablate ran (rc=0" in r.stdout
    assert "localized: deterministic=on removes match's divergence" in r.stdout
    # the chain was reached: the reference server takes the dumper's relaunch flags (and
    # ignores them), match reproduces there, and the chain stops at the step the reference
    # server cannot do, naming it, as it will go past it on the H200
    assert "chain: dumps failed: " in r.stdout and "has no /dumper/ routes" in r.stdout
