#!/usr/bin/env bash
# Issue 8 on the H200 (one device call, each step bounded and writing into $OUT): capture the demo's matmul from
# the running program (examples/transformer_mlp/run.py, no table: the spec's default config), replay it in the
# three modes, compare a BLOCK_K variant (--set) and a deliberately wrong index (a source variant made here by
# editing the kernel's load), save the faster correct one when it is a source variant, run the program again.
# Wheels: .whl (carry it).
NAME=issue8
. benchmarks/h200_env.sh
cp -r examples "$W/examples"  # save rewrites a copy, never the tree
step capture
timeout 120 python3 -m kerntune capture --kernel matmul_kernel --nth 5 -o "$W/cap" --json -- python3 \
  "$W/examples/transformer_mlp/run.py" --steps 10 > "$OUT/capture.json" 2>> "$LOG"; echo "exit $?" >> "$LOG"
for mode in isolated sustained replays; do
  step "replay $mode"
  timeout 120 python3 -m kerntune replay "$W/cap" --mode $mode --iterations 200 --json > "$OUT/replay_$mode.json" \
    2>> "$LOG"; echo "exit $?" >> "$LOG"
done
step "compare BLOCK_K variants"
for k in 32 64 128 256; do
  timeout 120 python3 -m kerntune lab compare "$W/cap" --set BLOCK_K=$k --iterations 200 --json \
    > "$OUT/compare_bk$k.json" 2>> "$LOG"; echo "BLOCK_K=$k exit $?" >> "$LOG"
done
step "compare a wrong index"
sed 's/offs_k\[None, :\]/(offs_k[None, :] + 1)/' "$W/examples/triton_matmul/spec.py" > "$W/wrong.py"
timeout 120 python3 -m kerntune lab compare "$W/cap" --variant "$W/wrong.py" --iterations 50 --json \
  > "$OUT/compare_wrong.json" 2>> "$LOG"; echo "exit $? (1 expected: validation fails)" >> "$LOG"
tar czf "$OUT/lab.tgz" -C "$W" cap/manifest.json cap/history.jsonl cap/logs 2>> "$LOG"
step done
