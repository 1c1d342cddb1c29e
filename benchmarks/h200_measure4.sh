#!/usr/bin/env bash
# Issue 3's H200 run, part 4: the gpu tests on the final code, and repeatability with a window long enough to
# span the power controller's swings (1 s warm-up, 1.5 s minimum window) beside do_bench. Logs under $OUT.
set -u
OUT=${OUT:-/tmp/kt-out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src:$PWD" PYTHONUNBUFFERED=1 KERNTUNE_HOME="$OUT/store"
timeout 215 python3 -m pytest tests/gpu -q -rA -x 2>&1 | tee "$OUT/gpu_tests.log" | tail -10
timeout 90 python3 benchmarks/repeatability.py --out "$OUT/repeatability4.json" --variants "1000:1500:20000" 2>&1 | head -3
