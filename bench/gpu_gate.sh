#!/usr/bin/env bash
# Issue 12's table on the H200: SGLang's three kl_test_utils helpers vs `kltui check` variants,
# same real SGLang server, same ids, alternating, medians. One command after the two setup
# calls of shared/gpu_sglang/README.md (stash c01; stash c02 + install + model + kltui):
#
#   bash bench/gpu_gate.sh            (device tool, carry [".gpu/bin"]; about 5-6 minutes)
#
# Writes $OUT/bench_gate.json, $OUT/server.log and prints the table. The bench imports kltui
# from this checkout (the working tree travels with the call), textual & co. from /root/kl.
# Extra arguments go to bench/bench_gate.py (e.g. --repeats 3, --variants "kltui check").
set -uo pipefail
PY=/opt/torch/.venv/bin/python3
OUTD=${OUT:-/tmp/bench-gate}
PORT=${PORT:-30001}
MODEL=${MODEL:-/root/tiny-llama}
mkdir -p "$OUTD"
[ -f /root/carry/env.sh ] || { echo "FATAL: /root/carry/env.sh missing: run the README's setup calls 1 and 2 first"; exit 1; }
# shellcheck disable=SC1091
source /root/carry/env.sh
cd "$(dirname "$0")/.." || exit 1

setsid "$PY" -m sglang.launch_server --model-path "$MODEL" --attention-backend triton \
  --sampling-backend pytorch --host 127.0.0.1 --port "$PORT" ${SERVER_ARGS:-} \
  > "$OUTD/server.log" 2>&1 &
SPID=$!
trap 'kill -TERM -- -$SPID 2>/dev/null; sleep 3; kill -KILL -- -$SPID 2>/dev/null' EXIT
t0=$SECONDS
until curl -sf -m 2 "127.0.0.1:$PORT/health_generate" >/dev/null; do
  kill -0 $SPID 2>/dev/null || { echo "SERVER DIED"; tail -40 "$OUTD/server.log"; exit 1; }
  [ $((SECONDS - t0)) -lt 300 ] || { echo "SERVER NOT READY after 300 s"; tail -40 "$OUTD/server.log"; exit 1; }
  sleep 1
done
echo "server ready after $((SECONDS - t0)) s"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$PY" bench/bench_gate.py --server "127.0.0.1:$PORT" --model "$MODEL" --sglang-python "$PY" \
  --samples 32 --prompt-tokens 1000-2500 --max-new-tokens 512 \
  --budget-s "${BUDGET_S:-$((330 - (SECONDS - t0)))}" --out "$OUTD/bench_gate.json" "$@"
