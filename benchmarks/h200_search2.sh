#!/usr/bin/env bash
# Search issue, H200: tune SHAPES (one kerntune run, default strategy) and compare the winners with torch.matmul
# and the tutorial's triton.autotune under kerntune's protocol; optionally (SERIAL=1) time a serial
# compile-then-time loop (no compile workers, random order, full protocol) on M=128,N=4096,K=14336.
set -u
OUT=${OUT:-/tmp/kt-out}
mkdir -p "$OUT"
export PYTHONPATH="/tmp/site:$PWD/src:$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
start=$(date +%s)
KERNTUNE_HOME="$OUT/bench/store" timeout "${TUNE_LIMIT:-460}" python3 benchmarks/search_vs_anchors.py --out "$OUT/bench" \
  --tune --compare --shapes "$SHAPES" --tag "$TAG" 2>&1 | tee "$OUT/bench.log" | grep -v "^\[" | tail -40
grep -c "^\[" "$OUT/bench.log"; grep "^\[" "$OUT/bench.log" | awk 'NR % 25 == 1' | tail -30
echo "benchmark exit $? in $(( $(date +%s) - start )) s"
if [ "${SERIAL:-0}" = 1 ]; then
  start=$(date +%s)
  KERNTUNE_HOME="$OUT/serial" KERNTUNE_COMPILE_WORKERS=0 KERNTUNE_CONFIRM_ROUNDS=0 TRITON_CACHE_DIR="$OUT/serial-cache" \
    timeout 120 python3 -m kerntune tune examples/triton_matmul --shape M=128,N=4096,K=14336 --strategy random \
    --budget "${SERIAL_N:-10}" --json > "$OUT/serial.json" 2> "$OUT/serial.err"
  echo "serial loop exit $? in $(( $(date +%s) - start )) s"
fi
if [ -n "${GPU_TESTS:-}" ]; then
  timeout 150 python3 -m pytest tests/gpu -q -rA -k "$GPU_TESTS" 2>&1 | tail -6
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$OUT/gpu.txt" 2>&1
for db in "$OUT/bench/store/kerntune.sqlite" "$OUT/serial/kerntune.sqlite"; do
  [ -f "$db" ] && python3 -c "
import csv, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute('SELECT c.id, c.shape_key, c.role, c.label, c.config_key, c.status, c.failure, c.compile_s, c.gate_s,'
                  ' c.measure_s, c.started, c.finished, (SELECT median_ms FROM measurements m WHERE m.candidate_id = c.id'
                  \" AND m.phase = 'search' ORDER BY m.id DESC LIMIT 1) FROM candidates c ORDER BY c.id\").fetchall()
w = csv.writer(open(sys.argv[1] + '.candidates.csv', 'w'))
w.writerow(['id', 'shape', 'role', 'label', 'config', 'status', 'failure', 'compile_s', 'gate_s', 'measure_s',
            'started', 'finished', 'median_ms'])
w.writerows(rows)
" "$db"
done
rm -rf "$OUT/serial-cache" "$OUT/bench/store/kerntune.sqlite"* "$OUT/serial/kerntune.sqlite"*
