#!/usr/bin/env bash
# The lab's compare with everything it reports on the H200: capture the demo's matmul (as h200_issue8.sh does),
# compare BLOCK_K=128 with --counters (Nsight Compute, --clock-control none), human-readable and JSON; then the
# lab's gpu test. Wheels: .whl (carry it).
NAME=lab_counters
. benchmarks/h200_env.sh
cp -r examples "$W/examples"
step capture
timeout 120 python3 -m kerntune capture --kernel matmul_kernel --nth 5 -o "$W/cap" -- python3 \
  "$W/examples/transformer_mlp/run.py" --steps 10 >> "$LOG" 2>&1; echo "exit $?" >> "$LOG"
step "compare --counters"
timeout 200 python3 -m kerntune lab compare "$W/cap" --set BLOCK_K=128 --iterations 100 --counters >> "$LOG" 2>&1
echo "exit $?" >> "$LOG"
timeout 200 python3 -m kerntune lab compare "$W/cap" --set BLOCK_K=128 --iterations 100 --counters --json \
  > "$OUT/compare_counters.json" 2>> "$LOG"; echo "exit $?" >> "$LOG"
step "gpu test"
timeout 200 python3 -m pytest tests/gpu/test_lab_gpu.py -rA -p no:cacheprovider > "$OUT/lab_gpu_test.log" 2>&1
echo "rc $?" >> "$OUT/lab_gpu_test.log"
step done
