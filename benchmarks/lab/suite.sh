# about: the kernel laboratory on a real program's launch: capture, replay modes, variants compared and validated, the winner saved into the table the program reads, counters
# steps: acceptance counters model web
# needs: gpu
# acceptance: capture launch 5 of matmul_kernel from examples/transformer_mlp/run.py (no table: the spec's default
#             config); replay isolated / sustained / replays; compare BLOCK_K=32/64/128/256 (--set) and a
#             deliberately wrong index (a source variant made here), refuse to save the wrong one; save the fastest
#             correct BLOCK_K into a table; run the program default and table alternated ×3; capture again from the
#             table run to show the saved config ran. The tree's examples are copied first (save rewrites a copy).
# counters:   the same capture compared at BLOCK_K=128 with --counters (Nsight Compute, --clock-control none).
# model:      examples/hf_llama under torch.compile (prefill, MODEL_MODE): scope it; capture its hottest Inductor
#             kernel (by the profiler's name) and its hottest aten::mm (by the corpus's shape, --match); replay each
#             in the three modes; compare the mm call with kernels/triton_gemm at the config TABLE holds for its
#             key (default: the served-model suite's deployed table) and save it into a served table when not
#             slower; kerntune verify of kerntune run on that table shows whether it engaged.
# web:        the same through the web page's HTTP API, as its buttons send it (benchmarks/lab/lab_web_drive.py: kerntune
#             serve --programs over a copy of examples/hf_llama): dispatch list by GPU time, "Tune this kernel"
#             on the hottest Inductor kernel and the hottest aten::mm line (or the one of shape GEMM=MxNxK), replay,
#             compare with the tuned Triton GEMM at TABLE's config, at the configs CANDIDATES (a decode_gemm.py
#             report) checked for that shape and at CONFIGS (NAME=VALUE,...;...), save the fastest into
#             served.json when not slower; then the other two replay modes of each capture and kerntune verify of
#             the program under kerntune run --table served.json (engagement by kernel identity; END_TO_END=1
#             adds verify's end-to-end A/B of the table off against on, PROCESSES per side, within VERIFY_S).
lab_capture() {  # lab_capture FOLDER [PROGRAM ARGS...]
  local cap=$1; shift
  [ -d "$W/examples" ] || cp -r examples kernels "$W/"  # the demo loads ../../kernels/triton_gemm
  bounded 150 python3 -m kerntune capture --kernel matmul_kernel --nth 5 -o "$cap" --json -- \
    python3 "$W/examples/transformer_mlp/run.py" --steps 10 "$@"
}
verify_served() {  # verify_served OUT_DIR TABLE PROGRAM ARGS...: kerntune verify of the program under kerntune run
  # Engagement only (one profiled run of the program) unless END_TO_END=1: the end-to-end A/B runs the compiled
  # model in at least eight fresh processes, past what one device call holds beside the rest of the step.
  local r=$1 table=$2; shift 2
  local ab=(--no-ab); [ "${END_TO_END:-0}" = 1 ] && ab=(--processes "${PROCESSES:-2}")
  KERNTUNE_HOME="$W/store" bounded "${VERIFY_S:-300}" python3 -m kerntune verify --json "${ab[@]}" \
    --report "$r/verify.json" -- python3 -m kerntune run --table "$table" --spec-dir "$PWD/kernels" -- "$@" > "$r/verify.log" 2>&1
}
step_acceptance() {
  local r; r=$(step_dir acceptance); rm -rf "$W/cap" "$W/cap2" "$W/examples" "$W/kernels"
  local run="$W/examples/transformer_mlp/run.py" kt=(bounded 150 python3 -m kerntune) mode k best i
  lab_capture "$W/cap" > "$r/capture.json" 2>> "$LOG"
  for mode in isolated sustained replays; do
    "${kt[@]}" replay "$W/cap" --mode $mode --iterations 200 --json > "$r/replay_$mode.json" 2>> "$LOG"
  done
  for k in 32 64 128 256; do
    "${kt[@]}" lab compare "$W/cap" --set BLOCK_K=$k --iterations 200 --json > "$r/compare_bk$k.json" 2>> "$LOG"
  done
  sed 's/offs_k\[None, :\]/(offs_k[None, :] + 1)/' "$W/kernels/triton_gemm/kernels.py" > "$W/wrong.py"
  "${kt[@]}" lab compare "$W/cap" --variant "$W/wrong.py" --iterations 50 > "$r/compare_wrong.txt" 2>> "$LOG"
  note "  (exit 1 expected above: the wrong index fails validation)"
  "${kt[@]}" lab save "$W/cap" --variant "$W/wrong.py" >> "$LOG" 2>&1
  note "  (exit 2 expected above: a variant that failed validation is not saved)"
  best=$(python3 - "$r" <<'PY'
import json, pathlib, sys
rows = []
for p in pathlib.Path(sys.argv[1]).glob("compare_bk*.json"):
    try:
        d = json.loads(p.read_text())
    except ValueError:
        continue
    if d["validation"]["passed"]:
        rows.append((d["ratio"], d["overrides"]["BLOCK_K"]))
print(min(rows)[1] if rows else "")
PY
)
  [ -n "$best" ] || { note "  no BLOCK_K variant passed validation"; return 1; }
  note "  fastest correct: BLOCK_K=$best"
  "${kt[@]}" lab save "$W/cap" --set BLOCK_K=$best --table "$W/table.json" --json > "$r/save.json" 2>> "$LOG"
  cp "$W/table.json" "$r/" 2>/dev/null
  for i in 1 2 3; do
    timeout 120 python3 "$run" --steps 200 2>/dev/null | tail -1 | sed "s/^/default $i /" >> "$r/program.txt"
    KERNTUNE_LOG_DISPATCH=1 timeout 120 python3 "$run" --steps 200 --table "$W/table.json" 2>> "$r/dispatch.txt" \
      | tail -1 | sed "s/^/table $i /" >> "$r/program.txt"
  done
  cat "$r/program.txt" >> "$LOG"
  lab_capture "$W/cap2" --table "$W/table.json" > "$r/capture2.json" 2>> "$LOG"
  "${kt[@]}" replay "$W/cap2" --iterations 200 --json > "$r/replay2.json" 2>> "$LOG"
  python3 - "$r" >> "$LOG" <<'PY'
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
try:
    c2 = json.loads((r / "capture2.json").read_text())
    print("recaptured launch: BLOCK_K", c2["arguments"]["BLOCK_K"], "dispatch", c2.get("dispatch", {}).get("kind"),
          "replay median µs", med("replay2.json"))
except (OSError, ValueError, KeyError):
    print("recapture: no result")
PY
  mkdir -p "$r/cap"; cp -r "$W/cap/manifest.json" "$W/cap/history.jsonl" "$W/cap/logs" "$r/cap/" 2>/dev/null
  return 0
}
step_counters() {
  local r; r=$(step_dir counters)
  [ -d "$W/cap" ] || lab_capture "$W/cap" > "$r/capture.json" 2>> "$LOG"
  bounded 200 python3 -m kerntune lab compare "$W/cap" --set BLOCK_K=128 --iterations 100 --counters >> "$LOG" 2>&1
  bounded 200 python3 -m kerntune lab compare "$W/cap" --set BLOCK_K=128 --iterations 100 --counters --json \
    > "$r/compare_counters.json" 2>> "$LOG"
}

step_model() {
  local r; r=$(step_dir model)
  local app=examples/hf_llama/app.py kt=(bounded 240 python3 -m kerntune) mode
  local args="--mode ${MODEL_MODE:-prefill} --compile default --steps 5"
  local table; table=$(data_file "${TABLE:-benchmarks/data/served-model/2026-12-01/tune/table.json}") || return 1
  "${kt[@]}" scope --region step --corpus "$W/model.jsonl" --json -- python3 $app $args > "$r/scope.json" 2>> "$LOG"
  cp "$W/model.jsonl" "$r/" 2>/dev/null
  local kernel match
  read -r kernel match < <(python3 benchmarks/lab/lab_model_picks.py hottest "$r/scope.json" "$W/model.jsonl")
  note "  hottest Inductor kernel: $kernel; hottest aten::mm: $match"
  rm -rf "$W/gen" "$W/mm"
  "${kt[@]}" capture --kernel "$kernel" --nth 2 -o "$W/gen" --json -- python3 $app $args > "$r/capture_gen.json" 2>> "$LOG"
  "${kt[@]}" capture --kernel aten::mm --match "$match" -o "$W/mm" --json -- python3 $app $args \
    > "$r/capture_mm.json" 2>> "$LOG"
  for cap in gen mm; do
    for mode in isolated sustained replays; do
      "${kt[@]}" replay "$W/$cap" --mode $mode --iterations 100 --json > "$r/replay_${cap}_$mode.json" 2>> "$LOG"
    done
  done
  local -a config
  read -r -a config < <(python3 benchmarks/lab/lab_model_picks.py config "$r/capture_mm.json" "$table")
  note "  the table's config for the mm call: ${config[*]:-none, the spec default}"
  "${kt[@]}" lab compare "$W/mm" --spec kernels/triton_gemm "${config[@]}" --iterations 100 --json \
    > "$r/compare_mm.json" 2>> "$LOG"
  "${kt[@]}" lab save "$W/mm" --spec kernels/triton_gemm "${config[@]}" --table "$W/served.json" --json \
    > "$r/save_mm.json" 2>> "$LOG" || note "  (not saved: see the log)"
  cp "$W/served.json" "$r/" 2>/dev/null
  if [ -f "$W/served.json" ]; then
    verify_served "$r" "$W/served.json" python3 $app $args
  fi
  for cap in gen mm; do
    mkdir -p "$r/$cap"; cp "$W/$cap/manifest.json" "$W/$cap/history.jsonl" "$r/$cap/" 2>/dev/null
  done
  return 0
}
step_web() {
  local r; r=$(step_dir web)
  local args=(--mode "${MODEL_MODE:-prefill}" --compile default --steps 5) cap mode
  rm -rf "$W/programs" "$W/webstore"; mkdir -p "$W/programs"; cp examples/hf_llama/app.py "$W/programs/"
  local table candidates
  table=$(data_file "${TABLE:-benchmarks/data/served-model/2026-12-01/tune/table.json}") || return 1
  candidates=$(data_file "${CANDIDATES:-benchmarks/data/gemm/2026-12-01/decode/decode_gemm.json}") || return 1
  KERNTUNE_HOME="$W/webstore" TABLE=$table CANDIDATES=$candidates bounded 360 python3 benchmarks/lab/lab_web_drive.py "$W/programs" "$r" -- "${args[@]}" >> "$LOG" 2>&1
  for cap in $(python3 -c "import json,sys; print(' '.join(json.load(open(sys.argv[1])).values()))" "$r/captures.json"); do
    for mode in sustained replays; do
      bounded 120 python3 -m kerntune replay "$W/webstore/captures/$cap" --mode $mode --iterations 100 --json \
        > "$r/replay_${cap%%-*}_$mode.json" 2>> "$LOG"
    done
    mkdir -p "$r/$cap"; cp "$W/webstore/captures/$cap/manifest.json" "$W/webstore/captures/$cap/history.jsonl" "$r/$cap/"
  done
  cp "$W/programs/served.json" "$r/" 2>/dev/null || return 1
  verify_served "$r" "$W/programs/served.json" python3 "$W/programs/app.py" "${args[@]}"
  return 0
}

