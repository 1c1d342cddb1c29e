#!/usr/bin/env bash
# Issue 3's H200 run, part 2: repeatability sweep of warm-up and sampling window beside do_bench, ab's power
# on a planted 3% slowdown (in-process, default settings), and one fresh-process A/B with its cost.
set -u
OUT=${OUT:-/tmp/kt-out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src:$PWD" PYTHONUNBUFFERED=1 KERNTUNE_HOME="$OUT/store"
timeout 200 python3 benchmarks/repeatability.py --out "$OUT/repeatability2.json" \
    --variants "${VARIANTS:-100:0:200,500:250:5000,1000:500:5000,100:0:200}" 2>&1 | tail -12
timeout 200 python3 benchmarks/ab_power.py --spec benchmarks/specs/planted_matmul --slow-a @EXTRA=0 \
    --slow-b @EXTRA=2 --aa 1 --slow 10 --store "$OUT/ab-store" --out "$OUT/ab_power2.jsonl" > "$OUT/ab_power2.log" 2>&1
tail -1 "$OUT/ab_power2.log"
start=$(date +%s)
timeout 150 python3 -m kerntune ab --scheme fresh --processes 4 --spec benchmarks/specs/planted_matmul @EXTRA=0 @EXTRA=2 \
    --expect loss --store "$OUT/ab-store" > "$OUT/ab_fresh.txt" 2>&1
echo "fresh ab exit $? in $(( $(date +%s) - start )) s"; grep -v "A/" "$OUT/ab_fresh.txt" | head -20
