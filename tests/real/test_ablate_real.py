"""`kltui ablate --launch` on real SGLang 0.5.23 (CPU build, issue 29): kltui reads the installed
SGLang's own `launch_server --help`, starts the tier's SGLang command (scripts/real_engines:
torch_native attention, float32, no CUDA graphs) once per configuration under its watchdog, runs
the helpers on each and stops it. Two configurations the CPU build accepts: the base and
radix-cache=off.

The engine's environment (its venv's python, PYTHONPATH, offline Hugging Face) comes from
`real_engines.sh exec sglang`, and is set for the servers kltui launches."""

from __future__ import annotations

import json
import os
import shlex

from kltui.cli.commands import main
from tests.json_contract import read_json

from .conftest import CHECKPOINT
from .launch import script

SIZES = ["--samples", "8", "--max-new-tokens", "8", "--max-prompt-tokens", "48"]
ENV_DUMP = (
    "import json, os, sys; print(json.dumps({'python': sys.executable, 'env': dict(os.environ)}))"
)


def test_ablate_launches_real_sglang_per_configuration(engines, tmp_path, monkeypatch, capsys):
    got = script("exec", "sglang", "python", "-c", ENV_DUMP, timeout=120)
    assert got.returncode == 0, got.stderr[-2000:]
    found = json.loads(got.stdout.strip().splitlines()[-1])
    for k, v in found["env"].items():
        if os.environ.get(k) != v:
            monkeypatch.setenv(k, v)
    launch = [
        found["python"], "-m", "sglang.launch_server",
        "--model-path", str(CHECKPOINT.resolve()),
        "--device", "cpu",
        "--attention-backend", "torch_native",
        "--disable-cuda-graph",
        "--disable-overlap-schedule",
        "--dtype", "float32",
        "--context-length", "2048",
        # SGLang's CPU build counts the memory other processes hold against this fraction: at
        # 0.05 a configuration failed to start on a loaded machine ("raise above 0.058"); the
        # pool stays capped by --max-total-tokens, so a larger fraction allocates no more
        "--mem-fraction-static", "0.2",
        "--max-total-tokens", "4096",
    ]  # fmt: skip
    folder = tmp_path / "sweep"
    code = main(
        ["ablate", "--launch", shlex.join(launch), "--vary", "radix-cache=off", *SIZES,
         "--start-timeout", "600", "--folder", str(folder), "--json", str(tmp_path / "a.json")]
    )  # fmt: skip
    out = capsys.readouterr().out
    doc = read_json(tmp_path / "a.json", "ablation")
    sweep = doc["sweep"]
    assert [c["status"] for c in sweep["configs"]] == ["measured", "measured"], out[-3000:]
    base, off = doc["ablation"]["configs"]
    assert off["name"] == "radix-cache=off" and off["took_effect"] is True
    assert off["settings"]["disable_radix_cache"]["reported"] == "off"
    for h in ("prefill_cache_hit", "decode_cache_hit"):
        assert base["helpers"][h]["untested"] is None, base["helpers"][h]
        assert off["helpers"][h]["effect"] == "not tested"
    assert off["helpers"]["match"]["scored"] == base["helpers"]["match"]["scored"] == 8
    # each server started by kltui on its own loopback port, with SGLang's own log
    urls = [c["url"] for c in sweep["configs"]]
    assert len(set(urls)) == 2 and all(u.startswith("http://127.0.0.1:") for u in urls)
    assert "--disable-radix-cache" in sweep["configs"][1]["argv"]
    for c in sweep["configs"]:
        assert (folder / c["log"]).stat().st_size > 0
    assert code == doc["exit_code"] and code in (0, 1)
    print(out)
