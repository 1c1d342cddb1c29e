#!/usr/bin/env bash
# Issue 3's H200 acceptance run, part 1: gpu tests, in-process repeatability beside do_bench, graph mode,
# and ab's false-win rate and power (in-process scheme, default settings). Logs under $OUT.
set -u
OUT=${OUT:-/tmp/kt-out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src:$PWD" PYTHONUNBUFFERED=1 KERNTUNE_HOME="$OUT/store"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
timeout 240 python3 -m pytest tests/gpu -q -rA -x 2>&1 | tee "$OUT/gpu_tests.log" | tail -12
timeout 120 python3 benchmarks/repeatability.py --out "$OUT/repeatability.json" 2>&1 | tail -30
timeout ${AB_LIMIT:-240} python3 benchmarks/ab_power.py --spec benchmarks/specs/planted_matmul --slow-a @EXTRA=0 \
    --slow-b @EXTRA=2 --aa ${AA:-20} --slow ${SLOW:-10} --store "$OUT/ab-store" --out "$OUT/ab_power.jsonl" \
    > "$OUT/ab_power.log" 2>&1
tail -3 "$OUT/ab_power.log"
