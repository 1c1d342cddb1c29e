#!/usr/bin/env bash
# Issue 11 on a multi-GPU H200 machine: examples/triton_matmul (1,232 to 4,948 valid configs per shape) over the
# 10 LLM shapes, default strategy, BUDGET per shape, no confirmation — once with the local pool over every visible
# GPU (--workers N) and once on one GPU of the same machine (--workers 1), in ORDER; each run's wall time around
# the whole command. Scaling efficiency = one-GPU wall ÷ (N × N-GPU wall). Then, for every shape whose two runs
# chose different winners, both winners timed side by side on one GPU (benchmarks/time_configs.py, default
# protocol, 45 s each, SIDE_LIMIT s for all): within the noise band or not. Everything lands in $OUT/issue11.tgz.
# Wheels: .whl (carry it).
NAME=issue11
. benchmarks/h200_env.sh
R="$W/results"; mkdir -p "$R"
N=$(nvidia-smi -L | wc -l)
SHAPES=()
for s in 16,4096,4096 16,14336,4096 16,4096,14336 128,4096,4096 128,14336,4096 128,4096,14336 4096,4096,4096 \
         4096,14336,4096 4096,4096,14336 8192,8192,8192; do
  IFS=, read -r m n k <<< "$s"; SHAPES+=(--shape "M=$m,N=$n,K=$k")
done
for workers in ${ORDER:-$N 1}; do
  step "--workers $workers (of $N GPUs)"
  start=$(date +%s.%N)
  KERNTUNE_HOME="$W/w$workers" KERNTUNE_CONFIRM_ROUNDS=0 timeout "${LIMIT:-330}" python3 -m kerntune tune \
    examples/triton_matmul "${SHAPES[@]}" --budget "${BUDGET:-10s/shape}" --workers "$workers" --json \
    > "$R/w$workers.json" 2>> "$LOG"
  echo "--workers $workers: exit $?, wall $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" \
    "$start" "$(date +%s.%N)") s" | tee -a "$R/walls.txt" >> "$LOG"
  python3 benchmarks/export_candidates.py "$W/w$workers" "$R/w$workers-candidates.csv" >> "$LOG" 2>&1
done
step "winners"
python3 - "$R" "$N" > "$R/winners.txt" 2>&1 <<'PY'
import json, sys
from pathlib import Path
r, n = Path(sys.argv[1]), sys.argv[2]
runs = {w: json.loads((r / f"w{w}.json").read_text()) for w in (n, "1") if (r / f"w{w}.json").stat().st_size}
key = lambda c: ",".join(f"{k}={v}" for k, v in c.items())
by = {w: {f"{s['shape']['M']},{s['shape']['N']},{s['shape']['K']}": s["winner"] for s in rep["shapes"]} for w, rep in runs.items()}
for w, rep in runs.items():
    print("run", w, "slots", rep["run"]["shape_slots"])
for shape in by.get("1", {}):
    a, b = by[n].get(shape), by["1"].get(shape)
    same = a and b and a["config"] == b["config"]
    print("shape", shape, "same" if same else "differ", key(a["config"]) if a else None, key(b["config"]) if b else None)
PY
cat "$R/winners.txt" >> "$LOG"
side_end=$(( $(date +%s) + ${SIDE_LIMIT:-100} ))  # all side-by-side timings together stop here
grep "differ" "$R/winners.txt" | while read -r _ shape _ a b; do
  [ "$a" = None ] || [ "$b" = None ] && continue
  left=$(( side_end - $(date +%s) )); [ "$left" -lt 15 ] && { echo "side by side: no time left for $shape" >> "$LOG"; continue; }
  timeout $(( left < 45 ? left : 45 )) python3 benchmarks/time_configs.py --shape "$shape" --rounds 3 \
    --out "$R/side-$shape.json" "$a" "$b" > "$R/side-$shape.log" 2>&1
  tail -12 "$R/side-$shape.log" >> "$LOG"
done
tar czf "$OUT/issue11.tgz" -C "$W" results
