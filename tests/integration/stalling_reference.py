"""The reference server behind a flag of its own, `--stall-s S`: sleep S seconds before starting,
so that a configuration of `kltui ablate` never becomes healthy within `--start-timeout`.

`--help` is the reference server's own with `--stall-s` added, so the sweep's knob check (which
reads the launch command's --help) knows the flag. Run as `python stalling_reference.py ARGS`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

SERVE = [sys.executable, "-m", "kltui.reference", "serve"]


def main(argv: list[str]) -> int:
    if "--help" in argv or "-h" in argv:
        done = subprocess.run([*SERVE, "--help"], capture_output=True, text=True, check=False)
        sys.stdout.write(done.stdout)
        print("  --stall-s S           seconds to sleep before starting (a server that hangs)")
        return done.returncode
    rest, stall = [], 0.0
    words = iter(argv)
    for w in words:
        if w == "--stall-s":
            stall = float(next(words))
        elif w.startswith("--stall-s="):
            stall = float(w.split("=", 1)[1])
        else:
            rest.append(w)
    if stall > 0:
        print(f"stalling for {stall:g} s before starting", flush=True)
        time.sleep(stall)
    os.execv(SERVE[0], [*SERVE, *rest])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
