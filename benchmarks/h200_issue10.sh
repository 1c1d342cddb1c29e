#!/usr/bin/env bash
# Issue 10 on the H200: a pool of one (--workers 1: the worker pinned to GPU 0 under its lock, shapes handed out by
# the pool) against the direct path, same spec, shape, seed, strategy and budget, alternated twice; each run's
# winner and its confirmed median, and the pool run's recorded slot. Everything lands in $OUT/issue10.tgz.
# Wheels: .whl (carry it).
NAME=issue10
. benchmarks/h200_env.sh
R="$W/results"; mkdir -p "$R"
ARGS=(examples/triton_matmul --shape "${SHAPE:-M=16,N=4096,K=4096}" --strategy exhaustive --budget "${EVALS:-40}" --json)
for i in 1 2; do
  for mode in direct pool; do
    step "$mode $i"
    extra=(); [ $mode = pool ] && extra=(--workers 1)
    KERNTUNE_HOME="$W/$mode$i" timeout 200 python3 -m kerntune tune "${ARGS[@]}" "${extra[@]}" > "$R/$mode$i.json" \
      2>> "$LOG"; echo "exit $?" >> "$LOG"
    python3 - "$R/$mode$i.json" "$mode $i" >> "$R/winners.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
w = r["shapes"][0]["winner"]
print(sys.argv[2], w["config"], w["measurement"]["median_ms"], (w.get("confirmed") or {}).get("median_ms"), r["run"]["shape_slots"])
PY
  done
done
cat "$R/winners.txt" >> "$LOG"
tar czf "$OUT/issue10.tgz" -C "$W" results
