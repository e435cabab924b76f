#!/usr/bin/env bash
# Issue 31 on the H200: the Hugging Face transformers reference (bf16, sdpa) of the 8B-shaped
# checkpoint against SGLang FA3 (graphs on) serving it, 32 x (prompt + 512) tokens.
#
# After the setup calls of shared/gpu_sglang/README.md (stash c01, f01, f02, f03; stash c02 +
# install + kltui) and `bash bench/gpu_prod.sh model` (/root/llama3-8b and /root/ids.json), one
# device call, carry [".gpu/bin"] (+ ".gpu/kl" after a rebuild, then `device.sh kltui` first):
#   bash bench/gpu_hf.sh          cost, then check (both below; ~6-8 min)
#   bash bench/gpu_hf.sh cost     bench/bench_hf_reference.py: the reference's teacher-forced
#                                 forward of 32 x (prompt + 512) against SGLang's own
#                                 test_input_output_logprobs_match_helper on the same server and
#                                 ids (budget: at most 1x), and the reference's load time
#   bash bench/gpu_hf.sh check    kltui check --helpers match,hf_reference --baseline hf:MODEL:
#                                 SGLang vs the reference (config diff, exact union KL, flips by
#                                 the reference's margin), JSON + Markdown + console + recording
# With a vLLM on 127.0.0.1:8000 beside it (bench/gpu_migration.sh up graphs), VLLM=1 adds
# --baseline 127.0.0.1:8000 to check: the three-way table and its verdict.
# SGLang gets --mem-fraction-static ${MEM:-0.55}: the reference's 16 GB of bf16 weights and its
# logits (the scored rows of a chunk of 16 samples, ~2 GB) live on the same GPU.
# Everything lands in $OUT (server log, bench JSON, kltui JSON/Markdown/console, recording).
set -uo pipefail
PY=/opt/torch/.venv/bin/python3
O=${OUT:-/tmp/gpu-hf}
M=${MODEL:-/root/llama3-8b}
IDS=/root/ids.json
SAMPLES=${SAMPLES:-32}
NEW=${NEW:-512}
PORT=30003
MODE=${1:-all}
mkdir -p "$O"
[ -f /root/carry/env.sh ] || { echo "FATAL: /root/carry/env.sh missing: run the setup calls first"; exit 1; }
[ -f "$M/config.json" ] || { echo "FATAL: no model at $M: run bench/gpu_prod.sh model first"; exit 1; }
[ -f "$IDS" ] || { echo "FATAL: no $IDS: run bench/gpu_prod.sh model first"; exit 1; }
# shellcheck disable=SC1091
source /root/carry/env.sh
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/gpu_server_log.sh
source bench/gpu_server_log.sh
export PYTHONPATH=$PWD:$PYTHONPATH KLTUI_RUNS_DIR=$O/runs
# the worker runs with the python kltui runs with; say it (torch and transformers of the image)
export KLTUI_HF_PYTHON=$PY
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM -- -"$p" 2>/dev/null; done
  sleep 3
  for p in "${PIDS[@]}"; do kill -KILL -- -"$p" 2>/dev/null; done
}
trap cleanup EXIT

"$PY" - <<'EOF' 2>&1 | tee "$O/versions.txt"
import torch, transformers
print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
print("transformers", transformers.__version__)
EOF

echo "$(date +%T) start sglang-fa3 on $PORT (graphs on, mem ${MEM:-0.55})"
setsid "$PY" -m sglang.launch_server --model-path "$M" --sampling-backend pytorch \
  --attention-backend fa3 --host 127.0.0.1 --port "$PORT" --mem-fraction-static "${MEM:-0.55}" \
  > "$O/server-sglang-fa3.log" 2>&1 < /dev/null &
PIDS+=($!)
t0=$SECONDS
until curl -sf -m 2 "127.0.0.1:$PORT/health" >/dev/null; do
  # 480 s: SGLang 0.5.17 captures prefill CUDA graphs too (96 s of its 151 s start here)
  if [ $((SECONDS - t0)) -ge 480 ] || server_died "$O/server-sglang-fa3.log"; then
    echo "sglang-fa3 NOT READY after $((SECONDS - t0)) s"; tail -20 "$O/server-sglang-fa3.log"; exit 1
  fi
  sleep 1
done
echo "$(date +%T) sglang-fa3 ready after $((SECONDS - t0)) s"

if [ "$MODE" = all ] || [ "$MODE" = cost ]; then
  echo "$(date +%T) bench_hf_reference: ${SAMPLES} x (prompt + ${NEW}), bf16 sdpa"
  timeout 240 "$PY" bench/bench_hf_reference.py --server "127.0.0.1:$PORT" --model "$M" \
    --prompts "$IDS" --samples "$SAMPLES" --max-new-tokens "$NEW" --dtype bfloat16 \
    --attn sdpa --repeats "${REPEATS:-1}" --sglang-python "$PY" --out "$O/bench_hf_reference.json" \
    2>&1 | tee "$O/bench_hf_reference.txt"
  nvidia-smi --query-gpu=memory.used,memory.total --format=csv | tee -a "$O/bench_hf_reference.txt"
fi

if [ "$MODE" = all ] || [ "$MODE" = check ]; then
  vllm=()
  [ "${VLLM:-0}" = 1 ] && vllm=(--baseline 127.0.0.1:8000)
  echo "$(date +%T) kltui check --helpers match,hf_reference --baseline hf:$M ${vllm[*]}"
  /usr/bin/time -f "kltui check: %e s, peak RSS %M KB" timeout 300 "$PY" -m kltui check \
    --server "127.0.0.1:$PORT" --baseline "hf:$M" --hf-dtype bfloat16 --hf-attn sdpa \
    "${vllm[@]}" --helpers match,hf_reference --prompts "$IDS" --samples "$SAMPLES" \
    --max-new-tokens "$NEW" --json "$O/hf.json" --md "$O/hf.md" --record "$O/hf.kltui.jsonl" \
    2>&1 | tee "$O/hf-console.txt"
  echo "exit ${PIPESTATUS[0]}"
fi
cp "$O/server-sglang-fa3.log" "$O/server-sglang-fa3.log.txt" 2>/dev/null
echo "$(date +%T) done"
