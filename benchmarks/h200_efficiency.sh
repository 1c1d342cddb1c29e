#!/usr/bin/env bash
# Search issue, efficiency and throughput on one space: triton_matmul at M=16, N=K=4096, bf16 (1,232 valid configs
# for sm_90). Runs (RUNS, any order, each a fresh `kerntune tune` with its own empty Triton cache and store, no
# confirmation, its wall time taken around the whole command):
#   exhaustive  every valid config, compile-ahead workers (--strategy exhaustive)
#   raceN       the default strategy (auto -> race) with --seed N
#   serial      a serial compile-then-time loop (no compile workers, random order, full protocol) for SERIAL_S s
#   pipelined   the same random order and budget with compile-ahead workers (throughput at one protocol)
# All under one shortened protocol (KERNTUNE_WARMUP_MS / KERNTUNE_SAMPLE_BUDGET_MS below) to fit the device time;
# the same for every run. Each run's candidates are exported as CSV (benchmarks/export_candidates.py).
# GPU_TESTS=1 first runs the gpu tests.
set -u
OUT=${OUT:-/tmp/kt-out}
mkdir -p "$OUT"
export PYTHONPATH="/tmp/site:$PWD/src:$PWD" PYTHONUNBUFFERED=1
export KERNTUNE_WARMUP_MS=${WARMUP_MS:-100} KERNTUNE_SAMPLE_BUDGET_MS=${SAMPLE_MS:-500} KERNTUNE_CONFIRM_ROUNDS=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader | tee -a "$OUT/gpu.txt"
if [ -n "${GPU_TESTS:-}" ]; then
  (unset KERNTUNE_WARMUP_MS KERNTUNE_SAMPLE_BUDGET_MS KERNTUNE_CONFIRM_ROUNDS
   timeout "${TESTS_LIMIT:-260}" python3 -m pytest tests/gpu -q -rA 2>&1 | tee "$OUT/gpu_tests.log" | tail -15)
fi
for run in ${RUNS:-race1 race2 race3 race4 race5}; do
  case $run in
    exhaustive) args=(--strategy exhaustive); workers=-1; limit=${EXHAUSTIVE_LIMIT:-400} ;;
    race*) args=(--seed "${run#race}"); workers=-1; limit=${RACE_LIMIT:-100} ;;
    serial) args=(--strategy random --budget "${SERIAL_S:-60}s"); workers=0; limit=$(( ${SERIAL_S:-60} + 60 )) ;;
    pipelined) args=(--strategy random --budget "${SERIAL_S:-60}s"); workers=-1; limit=$(( ${SERIAL_S:-60} + 60 )) ;;
    *) echo "unknown run $run"; continue ;;
  esac
  start=$(date +%s.%N)
  KERNTUNE_HOME="$OUT/$run" KERNTUNE_COMPILE_WORKERS=$workers TRITON_CACHE_DIR="$OUT/cache-$run" \
    timeout "$limit" python3 -m kerntune tune examples/triton_matmul --shape M=16,N=4096,K=4096 "${args[@]}" \
    --json > "$OUT/$run.json" 2> "$OUT/$run.err"
  code=$?
  echo "$run: exit $code, wall $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" \
    "$start" "$(date +%s.%N)") s" | tee -a "$OUT/walls.txt"
  python3 benchmarks/export_candidates.py "$OUT/$run" "$OUT/$run-candidates.csv"
  rm -rf "$OUT/cache-$run" "$OUT/$run/kerntune.sqlite"*
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader | tee -a "$OUT/gpu.txt"
