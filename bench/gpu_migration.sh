#!/usr/bin/env bash
# Issues 30 and 29 on the H200: vLLM beside SGLang on the 8B-shaped random checkpoint (the
# migration check: cross_engine at 32 x 512 with graphs on and off on both sides), then
# `kltui ablate` on a production-shaped SGLang base.
#
# Before a device session: `bash bench/gpu_dryrun.sh` (this script's ablate path on the CPU
# machine, against the reference server; tests/integration/test_gpu_scripts_dryrun.py runs it).
# Send the setup calls as one batch of tool calls (a machine goes back 30 s after a call), and
# the calls that follow them too: measured 2026-12-02, setup 278 s, c02 + install + model 119 s.
#
# After the setup calls of shared/gpu_sglang/README.md (stash c01, f01, f02, f03; stash c02 +
# install + kltui) and shared/gpu_vllm/README.md (stash v01 + install), then
# `bash bench/gpu_prod.sh model` (the checkpoint /root/llama3-8b and /root/ids.json), one device
# call each, back to back, carry [".gpu/bin"]:
#   bash bench/gpu_migration.sh ce1     one pair, graphs on both sides, `kltui check --baseline`
#   bash bench/gpu_migration.sh ce      four servers at once (vLLM graphs / eager, SGLang FA3
#                                       graphs / no graphs), `kltui check --baseline` on each pair
#   [CHAIN=1] [VARY="--vary K=V ..."] [PARALLEL=N] bash bench/gpu_migration.sh ablate
#                                       kltui ablate: triton + deterministic base, vary
#                                       attention-backend=fa3 and cuda-graph=off; CHAIN=1 adds
#                                       --chain (dumper relaunch, kltui dumps, op probe)
#   [BASEARGS="--attention-backend fa3"] bash bench/gpu_migration.sh chainsteps
#                                       the chain's steps after the sweep, directly: the base
#                                       relaunched with the dumper, match + --batch-sizes, dumps
# Or split over calls, each well under the per-call limit (servers stay up between calls, in
# their own process groups; logs under /root/mig, copied into $OUT by every call):
#   bash bench/gpu_migration.sh up graphs|eager   start vLLM (8000) then SGLang FA3 (30001);
#                                                 eager: --enforce-eager / --disable-cuda-graph
#   bash bench/gpu_migration.sh run graphs|eager  kltui check --baseline (with --baseline-log)
#                                                 and bench/bench_cross_engine.py on the pair
#   bash bench/gpu_migration.sh down              stop the pair
#   [LEVEL=light] [BATCH=1,8,32] bash bench/gpu_migration.sh stress   (issue 32) SGLang FA3
#                 deterministic, graphs on: kltui check --stress (and --batch-sizes)
# `run` takes HF=1 (the transformers reference as well: the three-way table, issue 31) and
# COST=0 (no cost bench).
# Everything lands in $OUT (server logs, kltui JSON/Markdown/console, the sweep folder).
set -uo pipefail
PY=${PY:-/opt/torch/.venv/bin/python3}
# ENVF, IDS, LAUNCH: overridable for a dry run on a CPU machine against the reference server
# (bench/gpu_dryrun.sh), so that a device call never finds a script fault
ENVF=${ENVF:-/root/carry/env.sh}
O=${OUT:-/tmp/gpu-migration}
M=${MODEL:-/root/llama3-8b}
IDS=${IDS:-/root/ids.json}
DUMP_IDS=${DUMP_IDS:-/root/dump_ids.json}
SAMPLES=${SAMPLES:-32}
NEW=${NEW:-512}
mkdir -p "$O"
[ -f "$ENVF" ] || { echo "FATAL: $ENVF missing: run the setup calls first"; exit 1; }
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

vllm_start() { # PORT NAME ARGS...: vLLM in its own process group and env file, as the recipe's
  # device.sh start runs it (that script keeps one pid file, so it runs one server at a time)
  local port=$1 name=$2
  shift 2
  echo "$(date +%T) start vllm-$name on $port: $*"
  # shellcheck disable=SC1091
  ( source /root/carry/venv.sh; export VLLM_SERVER_DEV_MODE=1
    exec setsid "$PY" -m vllm.entrypoints.cli.main serve "$M" --host 127.0.0.1 --port "$port" \
      --dtype bfloat16 --max-model-len 4096 --max-logprobs 20 "$@" ) \
    > "$O/server-vllm-$name.log" 2>&1 < /dev/null &
  PIDS+=($!)
}
sglang_start() { # PORT NAME MEMFRAC ARGS...: SGLang in its own process group, its env file
  local port=$1 name=$2 mem=$3
  shift 3
  echo "$(date +%T) start sglang-$name on $port: $*"
  # shellcheck disable=SC1091
  ( source "$ENVF"
    exec setsid "$PY" -m sglang.launch_server --model-path "$M" --sampling-backend pytorch \
      --host 127.0.0.1 --port "$port" --mem-fraction-static "$mem" "$@" ) \
    > "$O/server-sglang-$name.log" 2>&1 &
  PIDS+=($!)
}
ready() { # PORT NAME: until /health answers; a server whose log says it died fails at once
  local t0=$SECONDS
  until curl -sf -m 2 "127.0.0.1:$1/health" >/dev/null; do
    [ $((SECONDS - t0)) -lt 480 ] || { echo "$2 NOT READY"; return 1; }
    if server_died "$O/server-$2.log"; then
      echo "$2 DIED after $((SECONDS - t0)) s"
      return 1
    fi
    sleep 1
  done
  echo "$(date +%T) $2 ready after $((SECONDS - t0)) s of waiting"
  curl -s "127.0.0.1:$1/server_info" > "$O/server_info-$2.json"
}
kltui() { # kltui from this working tree, with SGLang's env file (it imports neither engine)
  # shellcheck disable=SC1090
  ( source "$ENVF"; export PYTHONPATH=$ROOT:${PYTHONPATH:-} KLTUI_RUNS_DIR=$O/runs
    # KLTUI_LIMIT=S: bounded by timeout (a shell function cannot be timeout's command)
    # GNU time where there is one (the GPU image has it; a CI machine may not)
    timer=()
    [ -x /usr/bin/time ] && timer=(/usr/bin/time -f "kltui: %e s, peak RSS %M KB")
    "${timer[@]}" ${KLTUI_LIMIT:+timeout "$KLTUI_LIMIT"} "$PY" -m kltui "$@" )
}

P=/root/mig
keep() { # copy the persistent logs and results into this call's $OUT
  mkdir -p "$P"
  cp -r "$P"/. "$O"/ 2>/dev/null
}

case "${1:-}" in
up)
  # left running for the next calls: no cleanup on exit
  trap - EXIT
  mkdir -p "$P"
  O=$P
  if [ "${2:-graphs}" = eager ]; then vx=(--enforce-eager); sx=(--disable-cuda-graph); else vx=(); sx=(); fi
  vllm_start 8000 "${2:-graphs}" --attention-backend FLASH_ATTN --gpu-memory-utilization 0.3 "${vx[@]}"
  ready 8000 "vllm-${2:-graphs}" || { tail -30 "$O/server-vllm-${2:-graphs}.log"; exit 1; }
  sglang_start 30001 "${2:-graphs}" 0.4 --attention-backend fa3 "${sx[@]}"
  ready 30001 "sglang-${2:-graphs}" || { tail -30 "$O/server-sglang-${2:-graphs}.log"; exit 1; }
  printf '%s\n' "${PIDS[@]}" > "$P/pids"
  O=${OUT:-/tmp/gpu-migration}
  keep
  ;;
run)
  trap - EXIT
  v=${2:-graphs}
  echo "$(date +%T) kltui check --server sglang-$v --baseline vllm-$v"
  # HF=1: the transformers reference too (bf16, sdpa): the three-way table
  hf=()
  [ "${HF:-0}" = 1 ] && hf=(--baseline "hf:$M" --hf-attn sdpa)
  kltui check --server 127.0.0.1:30001 --baseline 127.0.0.1:8000 "${hf[@]}" \
    --baseline-log "$P/server-vllm-$v.log" --prompts "$IDS" \
    --samples "$SAMPLES" --max-new-tokens "$NEW" --top-k 5 \
    --json "$P/ce-$v.json" --md "$P/ce-$v.md" > "$P/ce-$v.txt" 2>&1
  echo "rc=$?"
  tail -70 "$P/ce-$v.txt"
  [ "${COST:-1}" = 1 ] || { keep; exit 0; }
  echo "$(date +%T) bench_cross_engine ($v)"
  ( source "$ENVF"; export PYTHONPATH=$ROOT:${PYTHONPATH:-}
    timeout "${COST_TIMEOUT:-280}" "$PY" bench/bench_cross_engine.py --server 127.0.0.1:30001 --baseline 127.0.0.1:8000 \
      --prompts "$IDS" --samples "$SAMPLES" --max-new-tokens "$NEW" --repeats "${REPEATS:-2}" ) \
    2>&1 | tee "$P/cost-$v.txt" | tail -5
  keep
  ;;
stress)
  # issue 32: FA3, deterministic inference, graphs on; quiet then under --stress LEVEL
  sglang_start 30002 det 0.85 --attention-backend fa3 --enable-deterministic-inference
  ready 30002 sglang-det || { tail -30 "$O/server-sglang-det.log"; exit 1; }
  echo "$(date +%T) kltui check --stress ${LEVEL:-light}"
  kltui check --server 127.0.0.1:30002 --prompts "$IDS" --samples "$SAMPLES" \
    --max-new-tokens "$NEW" --stress "${LEVEL:-light}" ${BATCH:+--batch-sizes "$BATCH"} \
    --json "$O/stress.json" --md "$O/stress.md" > "$O/stress.txt" 2>&1
  echo "rc=$?"
  tail -60 "$O/stress.txt"
  ;;
down)
  trap - EXIT
  while read -r p; do kill -TERM -- -"$p" 2>/dev/null; done < "$P/pids"
  sleep 5
  while read -r p; do kill -KILL -- -"$p" 2>/dev/null; done < "$P/pids"
  sleep 2
  nvidia-smi --query-gpu=memory.used --format=csv,noheader
  keep
  ;;
ce1)
  # one pair, graphs on both sides, at the recipe's memory split (vLLM 0.3, SGLang 0.4)
  vllm_start 8000 graphs --attention-backend FLASH_ATTN --gpu-memory-utilization 0.3
  ready 8000 vllm-graphs || { tail -30 "$O/server-vllm-graphs.log"; exit 1; }
  sglang_start 30001 graphs 0.4 --attention-backend fa3
  ready 30001 sglang-graphs || { tail -30 "$O/server-sglang-graphs.log"; exit 1; }
  echo "$(date +%T) kltui check --server sglang-graphs --baseline vllm-graphs"
  kltui check --server 127.0.0.1:30001 --baseline 127.0.0.1:8000 --prompts "$IDS" \
    --samples "$SAMPLES" --max-new-tokens "$NEW" --top-k 5 \
    --json "$O/ce-graphs.json" --md "$O/ce-graphs.md" > "$O/ce-graphs.txt" 2>&1
  echo "rc=$?"
  tail -45 "$O/ce-graphs.txt"
  ;;
ce)
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  # vLLM one at a time, before SGLang: vLLM sizes its KV cache from the memory it sees
  # while it profiles, which another server allocating at that moment would corrupt
  vllm_start 8000 graphs --attention-backend FLASH_ATTN --gpu-memory-utilization 0.22
  ready 8000 vllm-graphs || { tail -30 "$O/server-vllm-graphs.log"; exit 1; }
  vllm_start 8001 eager --attention-backend FLASH_ATTN --enforce-eager --gpu-memory-utilization 0.22
  ready 8001 vllm-eager || { tail -30 "$O/server-vllm-eager.log"; exit 1; }
  sglang_start 30001 graphs 0.22 --attention-backend fa3
  sglang_start 30002 eager 0.22 --attention-backend fa3 --disable-cuda-graph
  ready 30001 sglang-graphs || { tail -30 "$O/server-sglang-graphs.log"; exit 1; }
  ready 30002 sglang-eager || { tail -30 "$O/server-sglang-eager.log"; exit 1; }
  for v in graphs eager; do
    port=$([ $v = graphs ] && echo 30001 || echo 30002)
    vport=$([ $v = graphs ] && echo 8000 || echo 8001)
    echo "$(date +%T) kltui check --server sglang-$v --baseline vllm-$v"
    kltui check --server 127.0.0.1:$port --baseline 127.0.0.1:$vport --prompts "$IDS" \
      --samples "$SAMPLES" --max-new-tokens "$NEW" --top-k 5 \
      --json "$O/ce-$v.json" --md "$O/ce-$v.md" > "$O/ce-$v.txt" 2>&1
    echo "rc=$?"
    tail -40 "$O/ce-$v.txt"
  done
  ls "$O"
  ;;
chainsteps)
  # the steps `kltui ablate --chain` takes after its sweep, run directly (when a device lease is
  # too short for the sweep and the chain in one call): the base relaunched with the dumper's
  # environment and no graphs (kltui/dumps/chain.py's DUMPER_ENV and NO_GRAPH_FLAGS), match with
  # the batch probe on it, then `kltui dumps` (BASEARGS: the base's own flags)
  D=$O/dumps
  mkdir -p "$D"
  # shellcheck disable=SC2086
  DUMPER_ENABLE=0 DUMPER_SERVER_PORT=reuse DUMPER_NON_INTRUSIVE_MODE=all DUMPER_DIR=$D \
    sglang_start 30001 dumper 0.4 ${BASEARGS:---attention-backend fa3} --disable-cuda-graph \
    --disable-prefill-cuda-graph
  ready 30001 sglang-dumper || { tail -30 "$O/server-sglang-dumper.log"; exit 1; }
  echo "$(date +%T) match with the batch probe on the relaunched base"
  kltui check --server 127.0.0.1:30001 --helpers match --batch-sizes "${BATCH:-1,4,16}" \
    --prompts "$IDS" --samples "$SAMPLES" --max-new-tokens "$NEW" \
    --json "$O/chain-match.json" > "$O/chain-match.txt" 2>&1
  echo "rc=$?"
  tail -25 "$O/chain-match.txt"
  echo "$(date +%T) kltui dumps on the relaunched base"
  kltui dumps --server 127.0.0.1:30001 --dump-dir "$D" --prompt-ids "$DUMP_IDS" \
    --json "$O/chain-dumps.json" > "$O/chain-dumps.txt" 2>&1
  echo "rc=$?"
  tail -25 "$O/chain-dumps.txt"
  rm -rf "$D"
  ;;
ablate)
  LAUNCH="${LAUNCH:-$PY -m sglang.launch_server --model-path $M --sampling-backend pytorch --host 127.0.0.1 --attention-backend triton --enable-deterministic-inference}"
  echo "$(date +%T) kltui ablate"
  # shellcheck disable=SC2086
  # CHAIN=1: then setting -> module -> op (--chain); TIMEOUT bounds it inside the call's limit,
  # so that what was measured still comes back as the sweep archive
  KLTUI_LIMIT=${TIMEOUT:-560} kltui ablate --launch "$LAUNCH" ${VARY:---vary attention-backend=fa3 --vary cuda-graph=off} \
    --parallel "${PARALLEL:-3}" --start-timeout 480 --prompts "$IDS" --samples "$SAMPLES" \
    ${CHAIN:+--chain} --max-new-tokens "$NEW" --json "$O/ablate.json" --md "$O/ablate.md" \
    > "$O/ablate.txt" 2>&1
  echo "rc=$?"
  tail -60 "$O/ablate.txt"
  # without the chain's dump folders: 1.9 GB at this shape took ~2 minutes of the call to pack
  # (2026-12-03) and no archive over the device's size limit comes back
  ( cd "$O/runs" && tar czf "$O/ablate-sweep.tgz" --exclude='ablate-*/dumps' ablate-* 2>/dev/null )
  ;;
*)
  echo "usage: bash bench/gpu_migration.sh up|run|down [graphs|eager] | ce1|ce|ablate" >&2
  exit 2
  ;;
esac
