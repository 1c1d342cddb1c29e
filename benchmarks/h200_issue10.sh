#!/usr/bin/env bash
# Issue 10 on the H200: a pool of one (--workers 1: the worker pinned to GPU 0 under its lock, shapes handed out by
# the pool) against the direct path, same spec, shape, seed, strategy and budget, alternated ROUNDS times (default
# 1); each run's winner and its confirmed median, and the pool run's recorded slot. Where the two paths' last
# winners differ, both are timed side by side in one process (benchmarks/time_configs.py, default protocol): the
# same winner, or two within the noise band. Everything lands in $OUT/issue10.tgz. Wheels: .whl (carry it).
NAME=issue10
. benchmarks/h200_env.sh
R="$W/results"; mkdir -p "$R"
ARGS=(examples/triton_matmul --shape "${SHAPE:-M=16,N=4096,K=4096}" --strategy exhaustive --budget "${EVALS:-40}" --json)
for i in $(seq "${ROUNDS:-1}"); do
  for mode in direct pool; do
    step "$mode $i"
    extra=(); [ $mode = pool ] && extra=(--workers 1)
    KERNTUNE_HOME="$W/$mode$i" timeout 200 python3 -m kerntune tune "${ARGS[@]}" "${extra[@]}" > "$R/$mode$i.json" \
      2>> "$LOG"; echo "exit $?" >> "$LOG"
    python3 - "$R/$mode$i.json" "$mode $i" >> "$R/winners.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
w = r["shapes"][0]["winner"]
key = ",".join(f"{k}={v}" for k, v in w["config"].items())  # field 3: compared below
print(sys.argv[2], key, w["measurement"]["median_ms"], (w.get("confirmed") or {}).get("median_ms"), r["run"]["shape_slots"])
PY
    tail -1 "$R/winners.txt" >> "$LOG"  # as each run ends: a call cut later still reports it
  done
done
last=$(tail -2 "$R/winners.txt" | cut -d' ' -f3 | sort -u)
if [ "$(echo "$last" | wc -l)" = 2 ]; then
  step "the two winners side by side"
  keys=(); for f in direct pool; do keys+=("$f=@$R/$f${ROUNDS:-1}.json"); done
  timeout 90 python3 benchmarks/time_configs.py --shape "$(echo "${SHAPE:-M=16,N=4096,K=4096}" | tr -d 'MNK=')" \
    --rounds 3 --out "$R/side.json" "${keys[@]}" > "$R/side.log" 2>&1
  tail -12 "$R/side.log" >> "$LOG"
fi
tar czf "$OUT/issue10.tgz" -C "$W" results
