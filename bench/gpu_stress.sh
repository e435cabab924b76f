#!/usr/bin/env bash
# Issue 32 on the H200: `kltui check --stress` and `--batch-sizes` against real SGLang, FA3,
# deterministic inference, CUDA graphs on, at the 8B shape (/root/llama3-8b, /root/ids.json).
#
# After the setup calls of shared/gpu_sglang/README.md (stash c01, f01, f02, f03; stash c02 +
# install + kltui) and `bash bench/gpu_prod.sh model`, one device call each, carry [".gpu/bin"]:
#   [LEVEL=light] bash bench/gpu_stress.sh stress
#       one server, --enable-metrics (retractions counted from /metrics); the quiet run, then
#       the same prompts under LEVEL's background traffic; on a deterministic server every
#       sample must be bit-identical (any difference: a state bug under load, named)
#   [LEVEL=light] bash bench/gpu_stress.sh pressure
#       the same with SGLang's cache consistency test's pressure: an undersized pool
#       (--max-total-tokens 20480), --chunked-prefill-size 512, --schedule-conservativeness
#       0.05 and SGLANG_TEST_RETRACT=1 (a retraction every SGLANG_TEST_RETRACT_INTERVAL=500
#       decode steps, as python/sglang/test/cache_consistency_jitter.py sets them)
#   [BATCH=1,8,32] bash bench/gpu_stress.sh batch
#       match alone at 128 new tokens, scored again at each batch size: the smallest at which
#       any token changes (on a deterministic server: a batch-invariance gap)
#   [LEVEL=light] [BATCH=1,8,32] bash bench/gpu_stress.sh both
#       stress, then batch, on one server (the two start the same server)
# Each call starts its server, runs, stops it, and stays under ~540 s (SAMPLES=32, NEW=512 for
# stress and pressure). Everything lands in $OUT (server log and /server_info, kltui's console,
# JSON and Markdown, the recordings, /metrics before and after).
set -uo pipefail
PY=/opt/torch/.venv/bin/python3
O=${OUT:-/tmp/gpu-stress}
M=${MODEL:-/root/llama3-8b}
IDS=/root/ids.json
SAMPLES=${SAMPLES:-32}
NEW=${NEW:-512}
LEVEL=${LEVEL:-light}
mkdir -p "$O"
[ -f /root/carry/env.sh ] || { echo "FATAL: /root/carry/env.sh missing: run the setup calls first"; exit 1; }
[ -f "$M/config.json" ] || { echo "FATAL: no model at $M: run bench/gpu_prod.sh model first"; exit 1; }
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/gpu_server_log.sh
source bench/gpu_server_log.sh
ROOT=$PWD
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM -- -"$p" 2>/dev/null; done
  sleep 3
  for p in "${PIDS[@]}"; do kill -KILL -- -"$p" 2>/dev/null; done
}
trap cleanup EXIT

start() { # NAME ENV... -- ARGS...: SGLang FA3 deterministic with graphs, its own process group
  local name=$1
  shift
  local envs=()
  while [ "$#" -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  echo "$(date +%T) start sglang-$name: ${envs[*]} $*"
  # shellcheck disable=SC1091
  ( source /root/carry/env.sh
    exec env "${envs[@]}" setsid "$PY" -m sglang.launch_server --model-path "$M" \
      --sampling-backend pytorch --host 127.0.0.1 --port 30003 --attention-backend fa3 \
      --enable-deterministic-inference --enable-metrics --mem-fraction-static 0.85 "$@" ) \
    > "$O/server-$name.log" 2>&1 &
  PIDS+=($!)
  local t0=$SECONDS
  until curl -sf -m 2 127.0.0.1:30003/health >/dev/null; do
    [ $((SECONDS - t0)) -lt 480 ] || { echo "$name NOT READY"; tail -30 "$O/server-$name.log"; exit 1; }
    if server_died "$O/server-$name.log"; then
      echo "$name DIED after $((SECONDS - t0)) s"; tail -30 "$O/server-$name.log"; exit 1
    fi
    sleep 1
  done
  echo "$(date +%T) $name ready after $((SECONDS - t0)) s"
  curl -s 127.0.0.1:30003/server_info > "$O/server_info-$name.json"
}
kltui() { # kltui from this working tree, with SGLang's env file
  # shellcheck disable=SC1091
  ( source /root/carry/env.sh; export PYTHONPATH=$ROOT:$PYTHONPATH KLTUI_RUNS_DIR=$O/runs
    /usr/bin/time -f "kltui: %e s, peak RSS %M KB" "$PY" -m kltui "$@" )
}
check_stress() { # NAME: quiet, then under --stress LEVEL; the reading and the server's counters
  curl -s 127.0.0.1:30003/metrics > "$O/metrics-before-$1.txt"
  echo "$(date +%T) kltui check --stress $LEVEL ($1)"
  kltui check --server 127.0.0.1:30003 --prompts "$IDS" --samples "$SAMPLES" \
    --max-new-tokens "$NEW" --stress "$LEVEL" --record "$O/$1.kltui.jsonl" \
    --json "$O/$1.json" --md "$O/$1.md" > "$O/$1.txt" 2>&1
  echo "rc=$?"
  curl -s 127.0.0.1:30003/metrics > "$O/metrics-after-$1.txt"
  grep -E "retracted|evicted_tokens_total|num_running|token_usage" "$O/metrics-after-$1.txt" | grep -v "^#"
  sed -n '/^stress (/,$p' "$O/$1.txt" | head -30
  tail -8 "$O/$1.txt"
}

case "${1:-}" in
stress)
  start stress --
  check_stress stress
  ;;
pressure)
  start pressure SGLANG_TEST_RETRACT=1 SGLANG_TEST_RETRACT_INTERVAL=500 -- \
    --max-total-tokens 20480 --chunked-prefill-size 512 --schedule-conservativeness 0.05
  check_stress pressure
  ;;
batch|both)
  # both: the stress run, then the batch probe on the same server (one start fewer)
  if [ "$1" = both ]; then start stress --; check_stress stress; else start batch --; fi
  echo "$(date +%T) kltui check --helpers match --batch-sizes ${BATCH:-1,8,32}"
  kltui check --server 127.0.0.1:30003 --prompts "$IDS" --samples 32 --max-new-tokens 128 \
    --helpers match --batch-sizes "${BATCH:-1,8,32}" --record "$O/batch.kltui.jsonl" \
    --json "$O/batch.json" > "$O/batch.txt" 2>&1
  echo "rc=$?"
  grep "^batch sizes" "$O/batch.txt"
  tail -8 "$O/batch.txt"
  ;;
*)
  echo "usage: [LEVEL=light|moderate|heavy] bash bench/gpu_stress.sh stress|pressure | [BATCH=1,8,32] bash bench/gpu_stress.sh batch|both" >&2
  exit 2
  ;;
esac
