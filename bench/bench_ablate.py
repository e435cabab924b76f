"""Where the time of a `kltui ablate` sweep goes (issue 29): server starts, helper runs, server
stops, the --help read, and kltui's own time (everything else: interpreter start and imports,
planning, progress lines, reading the sweep, the outputs). Budget: kltui's own time at most 5 %
of the whole.

Each round runs the whole command as a user does, in a subprocess (`python -m kltui ablate
--launch "<reference server> --dtype bfloat16" --vary deterministic=on --vary cuda-graph=off
--vary radix-cache=off`, four configurations), times the process from outside, and reads the
split of its sweep from the manifest (`ablation.json`, written by kltui/run/sweep_manifest.py):
kltui's own = process wall - starts - runs - stops - --help.

    python bench/bench_ablate.py [--rounds 3] [--samples 32] [--max-new-tokens 64]
        [--launch "CMD"] [--vary K=V ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VARIES = ["deterministic=on", "cuda-graph=off", "radix-cache=off"]


def one_round(args, folder: Path) -> dict:
    cmd = [
        sys.executable, "-m", "kltui", "ablate", "--launch", args.launch,
        *(w for v in args.vary for w in ("--vary", v)),
        "--samples", str(args.samples), "--max-new-tokens", str(args.max_new_tokens),
        "--max-prompt-tokens", str(args.max_prompt_tokens), "--folder", str(folder),
        "--json", str(folder.parent / f"{folder.name}.json"),
    ]  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env={**os.environ})
    wall = time.monotonic() - t0
    if done.returncode not in (0, 1):
        sys.exit(f"kltui ablate exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr}")
    t = json.loads((folder / "ablation.json").read_text())["timing"]
    server = t["start_s"] + t["run_s"] + t["stop_s"] + t["help_s"]
    verdict = json.loads((folder.parent / f"{folder.name}.json").read_text())
    return {
        "wall": wall,
        "start": t["start_s"],
        "run": t["run_s"],
        "stop": t["stop_s"],
        "help": t["help_s"],
        "sweep": t["total_s"],
        "own": wall - server,
        "own_in_sweep": t["kltui_s"],
        "verdict": verdict["ablation"]["verdict"]["kind"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--max-prompt-tokens", type=int, default=192)
    ap.add_argument(
        "--launch", default=f"{sys.executable} -m kltui.reference serve --dtype bfloat16"
    )
    ap.add_argument("--vary", action="append", default=None)
    args = ap.parse_args()
    args.vary = args.vary or VARIES
    rows = []
    with tempfile.TemporaryDirectory(prefix="kltui-bench-ablate-") as tmp:
        for i in range(args.rounds):
            r = one_round(args, Path(tmp) / f"sweep-{i}")
            rows.append(r)
            print(
                f"round {i + 1}: wall {r['wall']:.2f} s = starts {r['start']:.2f} + runs "
                f"{r['run']:.2f} + stops {r['stop']:.2f} + --help {r['help']:.2f} + kltui "
                f"{r['own']:.2f} s ({100 * r['own'] / r['wall']:.1f} %; inside the sweep "
                f"{r['own_in_sweep']:.2f} s); verdict {r['verdict']}",
                flush=True,
            )

    def med(key: str) -> float:
        return statistics.median(r[key] for r in rows)

    share = statistics.median(r["own"] / r["wall"] for r in rows)
    print(
        f"median of {len(rows)}: wall {med('wall'):.2f} s, server starts {med('start'):.2f} s, "
        f"helper runs {med('run'):.2f} s, server stops {med('stop'):.2f} s, --help "
        f"{med('help'):.2f} s, kltui's own {med('own'):.2f} s = {100 * share:.1f} % "
        f"(budget 5 %): {'within' if share <= 0.05 else 'OVER'} budget"
    )


if __name__ == "__main__":
    main()
