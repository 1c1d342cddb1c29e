#!/usr/bin/env bash
# Issue 8 on the H200 (one device call, each step bounded): capture the demo's matmul from the running program
# (examples/transformer_mlp/run.py, no table: the spec's default config, selected through its Dispatcher), replay
# it in the three modes, compare BLOCK_K variants (--set) and a deliberately wrong index (a source variant made
# here by editing the kernel's load), refuse to save the wrong one, save the fastest correct BLOCK_K into a
# dispatch table, run the program again with it (default and table runs alternated), and capture again from
# that run to show the launch ran the saved config. Everything lands in $OUT/lab8.tgz and $OUT/issue8.log.
# Wheels: .whl (carry it).
NAME=issue8
. benchmarks/h200_env.sh
R="$W/results"; mkdir -p "$R"
cp -r examples "$W/examples"  # save rewrites a copy, never the tree
RUN="$W/examples/transformer_mlp/run.py"
kt() { timeout 150 python3 -m kerntune "$@"; }
step capture
kt capture --kernel matmul_kernel --nth 5 -o "$W/cap" --json -- python3 "$RUN" --steps 10 > "$R/capture.json" \
  2>> "$LOG"; echo "exit $?" >> "$LOG"
for mode in isolated sustained replays; do
  step "replay $mode"
  kt replay "$W/cap" --mode $mode --iterations 200 --json > "$R/replay_$mode.json" 2>> "$LOG"; echo "exit $?" >> "$LOG"
done
step "compare BLOCK_K variants"
for k in 32 64 128 256; do
  kt lab compare "$W/cap" --set BLOCK_K=$k --iterations 200 --json > "$R/compare_bk$k.json" 2>> "$LOG"
  echo "BLOCK_K=$k exit $?" >> "$LOG"
done
step "compare a wrong index, then try to save it"
sed 's/offs_k\[None, :\]/(offs_k[None, :] + 1)/' "$W/examples/triton_matmul/spec.py" > "$W/wrong.py"
kt lab compare "$W/cap" --variant "$W/wrong.py" --iterations 50 > "$R/compare_wrong.txt" 2>> "$LOG"
echo "exit $? (1 expected: validation fails)" >> "$LOG"
kt lab save "$W/cap" --variant "$W/wrong.py" >> "$LOG" 2>&1; echo "save wrong: exit $? (2 expected)" >> "$LOG"
step "save the fastest correct BLOCK_K into a table"
BEST=$(python3 - "$R" <<'EOF'
import json, pathlib, sys
rows = []
for p in pathlib.Path(sys.argv[1]).glob("compare_bk*.json"):
    try:
        d = json.loads(p.read_text())
    except ValueError:
        continue
    if d["validation"]["passed"]:
        rows.append((d["ratio"], d["overrides"]["BLOCK_K"]))
print(min(rows)[1])
EOF
)
echo "fastest correct: BLOCK_K=$BEST" >> "$LOG"
kt lab save "$W/cap" --set BLOCK_K=$BEST --table "$W/table.json" --json > "$R/save.json" 2>> "$LOG"
echo "exit $?" >> "$LOG"; cp "$W/table.json" "$R/" 2>/dev/null
step "run the program again: default and table alternated, 200 steps each"
for i in 1 2 3; do
  timeout 120 python3 "$RUN" --steps 200 2>/dev/null | tail -1 | sed "s/^/default $i /" >> "$R/program.txt"
  KERNTUNE_LOG_DISPATCH=1 timeout 120 python3 "$RUN" --steps 200 --table "$W/table.json" 2>> "$R/dispatch.txt" \
    | tail -1 | sed "s/^/table $i /" >> "$R/program.txt"
done
cat "$R/program.txt" >> "$LOG"
step "capture again from the run with the table"
kt capture --kernel matmul_kernel --nth 5 -o "$W/cap2" --json -- python3 "$RUN" --steps 10 --table "$W/table.json" \
  > "$R/capture2.json" 2>> "$LOG"; echo "exit $?" >> "$LOG"
kt replay "$W/cap2" --iterations 200 --json > "$R/replay2.json" 2>> "$LOG"; echo "exit $?" >> "$LOG"
python3 - "$R" >> "$LOG" <<'EOF'
import json, pathlib, sys
r = pathlib.Path(sys.argv[1])
def med(name):
    try:
        return json.loads((r / name).read_text())["median_ms"] * 1e3
    except (OSError, ValueError, KeyError):
        return None
print("replay medians µs:", {m: med(f"replay_{m}.json") for m in ("isolated", "sustained", "replays")})
for k in (32, 64, 128, 256):
    try:
        d = json.loads((r / f"compare_bk{k}.json").read_text())
        print(f"BLOCK_K={k}: original {d['original']['median_ms']*1e3:.2f} µs, variant {d['median_ms']*1e3:.2f} µs, "
              f"ratio {d['ratio']:.3f}, validation {d['validation']}, resources {d['variant_result']['resources']}")
    except (OSError, ValueError, KeyError):
        print(f"BLOCK_K={k}: no result")
c2 = json.loads((r / "capture2.json").read_text())
print("recaptured launch: BLOCK_K", c2["arguments"]["BLOCK_K"], "dispatch", c2.get("dispatch", {}).get("kind"),
      "replay median µs", med("replay2.json"))
EOF
tar czf "$OUT/lab8.tgz" -C "$W" results cap/manifest.json cap/history.jsonl cap/logs $(cd "$W" && ls -d cap/backups 2>/dev/null) \
  2>> "$LOG"
step done
