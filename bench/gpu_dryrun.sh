#!/usr/bin/env bash
# The device scripts' own mechanics, on this CPU machine, before a device call spends minutes on
# them: bench/gpu_migration.sh ablate (CHAIN=1, the kltui function under KLTUI_LIMIT, the sweep
# archive) against the reference server in place of SGLang. What is checked is the script, not
# a verdict: in bf16 the reference base diverges and deterministic=on localizes it, so the
# chain runs; the reference server has no dumper, so it stops at its relaunch or dumps step.
#   bash bench/gpu_dryrun.sh          (about a minute; prints the script's tail, exits non-zero
#                                      when the script broke: rc 124/126/127, no JSON, no archive)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
PYX=${PYX:-$PWD/.venv/bin/python}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/model" "$T/out"
echo '{}' > "$T/model/config.json"
: > "$T/env.sh"
"$PYX" - "$T/ids.json" <<'PY'
import json, sys
json.dump([[1 + (i * 7 + j) % 200 for j in range(48)] for i in range(12)], open(sys.argv[1], "w"))
PY
out=$(OUT=$T/out PY=$PYX ENVF=$T/env.sh MODEL=$T/model IDS=$T/ids.json SAMPLES=12 NEW=8 \
  CHAIN=1 VARY="--vary deterministic=on" PARALLEL=2 TIMEOUT=240 \
  LAUNCH="$PYX -m kltui.reference serve --threads 1 --dtype bfloat16" bash bench/gpu_migration.sh ablate 2>&1)
echo "$out" | tail -n 25
rc=$(echo "$out" | sed -n 's/^rc=//p' | tail -n 1)
ok=1
case "$rc" in 0|1|3) ;; *) echo "dry run: kltui ablate ended rc=$rc"; ok=0 ;; esac
[ -s "$T/out/ablate.json" ] || { echo "dry run: no ablate.json"; ok=0; }
[ -s "$T/out/ablate-sweep.tgz" ] || { echo "dry run: no sweep archive"; ok=0; }
[ "$ok" = 1 ] && echo "dry run: bench/gpu_migration.sh ablate ran (rc=$rc, JSON and archive written)"
[ "$ok" = 1 ]
