#!/usr/bin/env bash
# Throughput on one space (triton_matmul at M=128, N=4096, K=14336, bf16), side by side in one call, each run
# with its own empty Triton cache and no confirmation: (1) a serial compile-then-time loop (no compile workers,
# random order, full protocol per config) and (2) the default race with compile-ahead workers, both stopped
# by --budget $N configs. Each run's candidates (with start and finish times) are exported as CSV. Then the
# race gpu test.
set -u
OUT=${OUT:-/tmp/kt-out}
N=${N:-24}
mkdir -p "$OUT"
export PYTHONPATH="/tmp/site:$PWD/src:$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
export_csv() {  # $1: store folder, $2: csv path
  python3 - "$1/kerntune.sqlite" "$2" <<'PY'
import csv, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT c.id, c.role, c.label, c.config_key, c.status, c.compile_s, c.gate_s, c.measure_s,"
                  " c.started, c.finished, (SELECT median_ms FROM measurements m WHERE m.candidate_id = c.id"
                  " AND m.phase = 'search' ORDER BY m.id DESC LIMIT 1) FROM candidates c ORDER BY c.id").fetchall()
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["id", "role", "label", "config", "status", "compile_s", "gate_s", "measure_s", "started",
                "finished", "median_ms"])
    w.writerows(rows)
search = [r for r in rows if r[1] != "baseline"]
configs = {r[3] for r in search}
span = max(r[9] for r in search) - min(r[8] for r in search)
print(f"{sys.argv[2]}: {len(configs)} configs, {len(search)} measurements in {span:.1f} s of search "
      f"= {60 * len(configs) / span:.1f} configs/min; compile {sum(r[5] or 0 for r in search):.1f} s summed, "
      f"gate {sum(r[6] or 0 for r in search):.1f} s, measure {sum(r[7] or 0 for r in search):.1f} s")
PY
}
for mode in ${MODES:-serial race}; do
  if [ "$mode" = serial ]; then extra=(--strategy random); workers=0; else extra=(--strategy race); workers=-1; fi
  start=$SECONDS
  KERNTUNE_HOME="$OUT/$mode" KERNTUNE_COMPILE_WORKERS=$workers KERNTUNE_CONFIRM_ROUNDS=0 \
    TRITON_CACHE_DIR="$OUT/cache-$mode" timeout 150 python3 -m kerntune tune examples/triton_matmul \
    --shape M=128,N=4096,K=14336 "${extra[@]}" --budget "$N" --seed 1 --json > "$OUT/$mode.json" 2> "$OUT/$mode.err"
  echo "$mode: exit $? in $((SECONDS - start)) s"
  export_csv "$OUT/$mode" "$OUT/$mode-candidates.csv"
  rm -rf "$OUT/cache-$mode" "$OUT/$mode/kerntune.sqlite"*
done
[ -n "${SKIP_TEST:-}" ] || timeout 120 python3 -m pytest tests/gpu -q -rA -k race 2>&1 | tail -4
