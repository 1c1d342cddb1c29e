# about: tuning spread over devices: a pool of one against the direct path (the same winner), and multi-GPU scaling where several GPUs are visible
# steps: pool-of-one multi-gpu
# needs: gpu
# pool-of-one: `kerntune tune kernels/triton_gemm --shape SHAPE (M=16,N=4096,K=4096) --strategy exhaustive
#              --budget EVALS (40)`, direct and with --workers 1 (the worker pinned to GPU 0 under its lock),
#              ROUNDS (1) times alternated, each with its own store and 3 confirmation rounds; where the last
#              winners differ, both timed side by side (benchmarks/search-efficiency/time_configs.py, default protocol).
# multi-gpu:   the 10 LLM shapes, default strategy, BUDGET (10s/shape), no confirmation, with --workers N over every
#              visible GPU and with --workers 1 on the same machine (ORDER); scaling efficiency = one-GPU wall ÷
#              (N × N-GPU wall); shapes whose two runs chose different winners are timed side by side on one GPU
#              (45 s each, SIDE_LIMIT s in all). Skipped on a one-GPU machine.
winner_line() {  # winner_line REPORT LABEL: LABEL, the winner's config key, its medians and the slots
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
w = r["shapes"][0]["winner"]
key = ",".join(f"{k}={v}" for k, v in w["config"].items())
print(sys.argv[2], key, w["measurement"]["median_ms"], (w.get("confirmed") or {}).get("median_ms"), r["run"]["shape_slots"])
PY
}
step_pool_of_one() {
  local r i mode extra last keys
  r=$(step_dir pool-of-one)
  local args=(kernels/triton_gemm --shape "${SHAPE:-M=16,N=4096,K=4096}" --strategy exhaustive --budget "${EVALS:-40}" --json)
  for i in $(seq "${ROUNDS:-1}"); do
    for mode in direct pool; do
      extra=(); [ $mode = pool ] && extra=(--workers 1)
      KERNTUNE_HOME="$W/$mode$i" bounded 200 python3 -m kerntune tune "${args[@]}" "${extra[@]}" > "$r/$mode$i.json" 2>> "$LOG"
      winner_line "$r/$mode$i.json" "$mode $i" >> "$r/winners.txt" 2>> "$LOG"
      tail -1 "$r/winners.txt" >> "$LOG"
    done
  done
  last=$(tail -2 "$r/winners.txt" | cut -d' ' -f3 | sort -u)
  if [ "$(echo "$last" | wc -l)" = 2 ]; then
    keys=(); for mode in direct pool; do keys+=("$mode=@$r/$mode${ROUNDS:-1}.json"); done
    bounded 90 python3 benchmarks/search-efficiency/time_configs.py --shape "$(echo "${SHAPE:-M=16,N=4096,K=4096}" | tr -d 'MNK=')" \
      --rounds 3 --out "$r/side.json" "${keys[@]}" > "$r/side.log" 2>&1
    tail -12 "$r/side.log" >> "$LOG"
  fi
}
step_multi_gpu() {
  local n; n=$(nvidia-smi -L | wc -l)
  [ "$n" -gt 1 ] || { note "  one GPU visible: multi-GPU scaling needs several, skipped"; return 0; }
  local r workers start shapes=() s m k side_end left
  r=$(step_dir multi-gpu)
  for s in 16,4096,4096 16,14336,4096 16,4096,14336 128,4096,4096 128,14336,4096 128,4096,14336 4096,4096,4096 \
           4096,14336,4096 4096,4096,14336 8192,8192,8192; do
    IFS=, read -r m n_ k <<< "$s"; shapes+=(--shape "M=$m,N=$n_,K=$k")
  done
  for workers in ${ORDER:-$n 1}; do
    start=$(date +%s.%N)
    KERNTUNE_HOME="$W/w$workers" KERNTUNE_CONFIRM_ROUNDS=0 bounded "${LIMIT:-330}" python3 -m kerntune tune \
      kernels/triton_gemm "${shapes[@]}" --budget "${BUDGET:-10s/shape}" --workers "$workers" --json > "$r/w$workers.json" 2>> "$LOG"
    echo "--workers $workers: wall $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" \
      "$start" "$(date +%s.%N)") s" >> "$r/walls.txt"
    export_candidates "$W/w$workers" "$r/w$workers-candidates.csv"
  done
  cat "$r/walls.txt" >> "$LOG"
  python3 - "$r" "$n" > "$r/winners.txt" 2>&1 <<'PY'
import json, sys
from pathlib import Path
r, n = Path(sys.argv[1]), sys.argv[2]
runs = {w: json.loads((r / f"w{w}.json").read_text()) for w in (n, "1") if (r / f"w{w}.json").stat().st_size}
key = lambda c: ",".join(f"{k}={v}" for k, v in c.items())
by = {w: {f"{s['shape']['M']},{s['shape']['N']},{s['shape']['K']}": s["winner"] for s in rep["shapes"]} for w, rep in runs.items()}
for w, rep in runs.items():
    print("run", w, "slots", rep["run"]["shape_slots"])
for shape in by.get("1", {}):
    a, b = by.get(n, {}).get(shape), by["1"].get(shape)
    same = a and b and a["config"] == b["config"]
    print("shape", shape, "same" if same else "differ", key(a["config"]) if a else None, key(b["config"]) if b else None)
PY
  cat "$r/winners.txt" >> "$LOG"
  side_end=$(( $(date +%s) + ${SIDE_LIMIT:-100} ))
  grep "differ" "$r/winners.txt" | while read -r _ shape _ a b; do
    { [ "$a" = None ] || [ "$b" = None ]; } && continue
    left=$(( side_end - $(date +%s) )); [ "$left" -lt 15 ] && { note "  side by side: no time left for $shape"; continue; }
    bounded $(( left < 45 ? left : 45 )) python3 benchmarks/search-efficiency/time_configs.py --shape "$shape" --rounds 3 \
      --out "$r/side-$shape.json" "$a" "$b" > "$r/side-$shape.log" 2>&1
    tail -12 "$r/side-$shape.log" >> "$LOG"
  done
}
