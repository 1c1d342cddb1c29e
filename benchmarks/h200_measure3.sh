#!/usr/bin/env bash
# Issue 3's H200 run, part 3 (after the block-median stopping rule and the new defaults): repeatability at
# default settings beside do_bench, the planted-slowdown A/B in both schemes with its cost, and
# triton_matmul's confirmation report. Logs under $OUT.
set -u
OUT=${OUT:-/tmp/kt-out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src:$PWD" PYTHONUNBUFFERED=1 KERNTUNE_HOME="$OUT/store"
timeout 110 python3 benchmarks/repeatability.py --out "$OUT/repeatability3.json" --variants "250:0:5000" 2>&1 | tail -12
for scheme in in-process fresh; do
  start=$(date +%s)
  timeout 200 python3 -m kerntune ab --scheme $scheme --spec benchmarks/specs/planted_matmul @EXTRA=0 @EXTRA=2 \
      --expect loss --json > "$OUT/ab_$scheme.json" 2> "$OUT/ab_$scheme.err"
  echo "$scheme ab exit $? in $(( $(date +%s) - start )) s"
  python3 -c "import json,sys; d=json.load(open('$OUT/ab_$scheme.json')); print(d['verdict'], d['reason'], 'wall', round(d['wall_s'],1))"
done
start=$(date +%s)
timeout 170 python3 -m kerntune tune examples/triton_matmul --strategy random --budget 24 --json > "$OUT/matmul.json" 2> "$OUT/matmul.err"
echo "matmul tune exit $? in $(( $(date +%s) - start )) s"
python3 -m kerntune show last > "$OUT/matmul.txt" 2>&1; head -45 "$OUT/matmul.txt"
