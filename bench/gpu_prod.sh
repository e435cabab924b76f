#!/usr/bin/env bash
# Issue 19 on the H200: kltui on production-shaped SGLang servers (Llama-3.1-8B shapes, random
# bf16 weights made on the machine, --skip-tokenizer-init as RL rollout servers run), each
# against SGLang's own kl_test_utils helpers on the same server and ids.
#
# After shared/gpu_sglang/README.md's setup calls (stash c01, f01, f02, f03; then stash c02 +
# install + kltui), one device call each, back to back, carry [".gpu/bin"]:
#   bash bench/gpu_prod.sh model     the checkpoint (~16 GB, /root/llama3-8b) and the id files
#   bash bench/gpu_prod.sh cost      FA3, graphs on: parity + whole-process/TUI cost; probe-ops
#   bash bench/gpu_prod.sh det       FA3 and triton with --enable-deterministic-inference:
#                                    parity, `kltui check --repeat 3` on FA3
#   bash bench/gpu_prod.sh triton    triton plain parity; `kltui dumps` (FA3, det, graphs off)
# Everything lands in $OUT (server logs, bench JSON, kltui JSON/console, dumps JSON).
set -uo pipefail
PY=/opt/torch/.venv/bin/python3
O=${OUT:-/tmp/gpu-prod}
M=${MODEL:-/root/llama3-8b}
IDS=/root/ids.json
DUMP_IDS=/root/dump_ids.json
SAMPLES=${SAMPLES:-32}
NEW=${NEW:-512}
mkdir -p "$O"
[ -f /root/carry/env.sh ] || { echo "FATAL: /root/carry/env.sh missing: run the setup calls first"; exit 1; }
# shellcheck disable=SC1091
source /root/carry/env.sh
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH KLTUI_RUNS_DIR=$O/runs
BASE="--model-path $M --skip-tokenizer-init --sampling-backend pytorch --host 127.0.0.1"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM -- -"$p" 2>/dev/null; done
  sleep 3
  for p in "${PIDS[@]}"; do kill -KILL -- -"$p" 2>/dev/null; done
}
trap cleanup EXIT

start() { # NAME PORT MEMFRAC ARGS...: a server in its own process group
  local name=$1 port=$2 mem=$3
  shift 3
  echo "$(date +%T) start $name on $port: $*"
  # shellcheck disable=SC2086
  setsid "$PY" -m sglang.launch_server $BASE --port "$port" --mem-fraction-static "$mem" "$@" \
    > "$O/server-$name.log" 2>&1 &
  PIDS+=($!)
}
ready() { # PORT NAME
  local t0=$SECONDS
  until curl -sf -m 2 "127.0.0.1:$1/health_generate" >/dev/null; do
    [ $((SECONDS - t0)) -lt 400 ] || { echo "$2 NOT READY"; tail -30 "$O/server-$2.log"; return 1; }
    sleep 1
  done
  echo "$(date +%T) $2 ready after $((SECONDS - t0)) s of waiting"
  curl -s "127.0.0.1:$1/server_info" > "$O/server_info-$2.json"
}
parity() { # PORT NAME [kltui args...]: SGLang's three helpers then `kltui check`, same ids
  local port=$1 name=$2
  shift 2
  echo "$(date +%T) parity $name"
  "$PY" bench/bench_gate.py --server "127.0.0.1:$port" --model "$M" --sglang-python "$PY" \
    --ids "$IDS" --samples "$SAMPLES" --max-new-tokens "$NEW" --repeats 1 --no-warmup \
    --variants "kltui check (whole process)" --tokenizer "$M" --kltui-args "$*" \
    --work "$O/$name" --out "$O/parity-$name.json" 2>&1 | tail -8
}

case "${1:-}" in
model)
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PY" -c "import sglang,torch;print('sglang',sglang.__version__,'torch',torch.__version__)"
  /usr/bin/time -f "checkpoint: %e s, peak RSS %M KB" "$PY" bench/make_random_checkpoint.py llama3-8b "$M"
  # 32 prompts of 1000-2500 regular-vocabulary ids (no special tokens, not the last id)
  "$PY" - "$IDS" "$DUMP_IDS" <<'EOF'
import json, sys
import numpy as np
rng = np.random.default_rng(0)
ids = [rng.integers(3, 128000, size=int(rng.integers(1000, 2501))).tolist() for _ in range(32)]
json.dump(ids, open(sys.argv[1], "w"))
json.dump(ids[0][:64], open(sys.argv[2], "w"))
print("ids:", len(ids), "prompts,", sum(map(len, ids)), "tokens")
EOF
  du -sh "$M"; df -h /root | tail -1
  ;;
cost)
  start fa3 30001 0.8 --attention-backend fa3
  ready 30001 fa3 || exit 1
  echo "$(date +%T) cost bench (FA3, graphs on)"
  "$PY" bench/bench_gate.py --server 127.0.0.1:30001 --model "$M" --sglang-python "$PY" \
    --ids "$IDS" --samples "$SAMPLES" --max-new-tokens "$NEW" --repeats 2 \
    --variants "kltui check (whole process),kltui (live TUI)" --tokenizer "$M" \
    --work "$O/cost" --out "$O/cost-fa3.json" --budget-s 300 2>&1 | tail -12
  # where a whole process's import time goes, on this machine
  "$PY" -X importtime -m kltui check --help > /dev/null 2> "$O/importtime.txt"
  cleanup
  PIDS=()
  echo "$(date +%T) probe-ops at the 8B shapes"
  for dt in bfloat16 float32; do
    timeout 120 "$PY" -m kltui probe-ops --device cuda --dtype $dt --hidden 4096 --vocab 128256 \
      --heads 32 --head-dim 128 --json "$O/probe-$dt.json" > "$O/probe-$dt.txt" 2>&1
    echo "probe-ops $dt rc=$?"
    tail -15 "$O/probe-$dt.txt"
  done
  ;;
det)
  start fa3det 30001 0.4 --attention-backend fa3 --enable-deterministic-inference
  ready 30001 fa3det || exit 1
  start tritondet 30002 0.8 --attention-backend triton --enable-deterministic-inference
  parity 30001 fa3det --repeat 3
  ready 30002 tritondet || exit 1
  parity 30002 tritondet
  ;;
triton)
  start triton 30001 0.4 --attention-backend triton
  ready 30001 triton || exit 1
  mkdir -p /root/dumps
  DUMPER_ENABLE=0 DUMPER_SERVER_PORT=reuse DUMPER_NON_INTRUSIVE_MODE=all DUMPER_DIR=/root/dumps \
    start dumps 30002 0.8 --attention-backend fa3 --enable-deterministic-inference \
    --disable-cuda-graph --disable-prefill-cuda-graph
  parity 30001 triton
  ready 30002 dumps || exit 1
  echo "$(date +%T) kltui dumps (FA3, deterministic, graphs off)"
  /usr/bin/time -f "dumps: %e s, peak RSS %M KB" timeout 240 "$PY" -m kltui dumps \
    --server 127.0.0.1:30002 --dump-dir /root/dumps --prompt-ids "$DUMP_IDS" --new-tokens 8 \
    --json "$O/dumps.json" > "$O/dumps.txt" 2>&1
  echo "dumps rc=$?"
  tail -30 "$O/dumps.txt"
  du -sh /root/dumps; find /root/dumps -type f | wc -l
  ;;
cost2)
  # the whole process as on a user's machine: the image's sitecustomize shadowed by an empty one
  mkdir -p /root/nosite && : > /root/nosite/sitecustomize.py
  start fa3 30001 0.8 --attention-backend fa3
  ready 30001 fa3 || exit 1
  KLTUI_BENCH_SITE=/root/nosite "$PY" bench/bench_gate.py --server 127.0.0.1:30001 --model "$M" \
    --sglang-python "$PY" --ids "$IDS" --samples "$SAMPLES" --max-new-tokens "$NEW" --repeats 1 \
    --no-warmup --variants "kltui check (whole process)" --tokenizer "$M" \
    --work "$O/cost2" --out "$O/cost2-fa3.json" 2>&1 | tail -6
  ;;
*)
  echo "usage: bash bench/gpu_prod.sh model|cost|det|triton" >&2
  exit 2
  ;;
esac
