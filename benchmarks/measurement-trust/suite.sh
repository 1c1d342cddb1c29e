# about: whether kerntune's timings hold: repeatability beside do_bench, A/A false calls and a planted slowdown through `kerntune ab`, fresh-process A/B, confirmation
# steps: repeatability ratio-repeatability claims-check process-spread sustained-load flush-dirty-lines ab-power ab-sources ab-fresh ab-power-fresh ab-env confirmation repeat-tunes
# needs: any
# repeatability: (GPU) 20 measurements of one bf16 4096³ torch.matmul in one process, triton.testing.do_bench
#                timing the same launch beside each; spread = (max − min) / median; VARIANTS of warm-up : min
#                window : max samples (default: the current defaults); a graph-mode measurement with launch
#                overhead apart (benchmarks/measurement-trust/repeatability.py).
# ratio-repeatability: (GPU) the winner/torch.matmul ratio at bf16 4096³ (RATIO_SHAPE) measured ROUNDS (20) times in one worker
#                (`kerntune ab --scheme in-process`, torch.matmul as A, the tuned config WINNER as B): each round's
#                ratio is its interleaved pairs' median log ratio; spread = (max − min) / median of the 20, absolute
#                medians beside them (benchmarks/measurement-trust/ratio_repeatability.py).
# claims-check:  (GPU) the 10 LLM shapes of benchmarks/gemm/search_vs_anchors.py tuned (`kerntune tune
#                kernels/triton_gemm`, bf16, CLAIMS_BUDGET 20s/shape), then each winner/torch.matmul ratio the report
#                prints checked independently in the same run: benchmarks/measurement-trust/claims_check.py times winner and torch.matmul
#                call by call (torch W W torch, 256 MiB flush before each, BLOCKS=100 blocks) by the profiler's kernel
#                records, split by its own reading of the trace; agreement within 1% per shape.
# process-spread: (GPU) benchmarks/measurement-trust/claims_check.py on one tune report (CHECK_REPORT: this run's claims-check report,
#                else the stored one-shape report of 128×4096×4096's fused split-K winner) in PROCESSES (4) fresh
#                processes: whether a ratio moves with the process that times it, each process's placements beside
#                the others' (at that shape on 2026-12-04 four processes read 1.18–1.20, the placements in one 1.17–1.18).
# sustained-load: (GPU) the claims check's protocol at SUSTAIN_SHAPE (8192,8192,8192) and SUSTAIN_CONFIG (the tuned
#                128×256×64 TMA persistent tile) in one profiler session of sustained load cut into windows of 8 blocks,
#                NVML's SM clock and power after each, from idle and after idle gaps of 0.1, 0.5 and 2 s
#                (benchmarks/measurement-trust/sustained_load_ratio.py): how the ratio moves with the power cap's clock.
#                (benchmarks/measurement-trust/profiled_idle_gap.py, run by hand: the same ratio by CUPTI with the device drained
#                around each launch, back to back, and with a flush of twice the L2; benchmarks/measurement-trust/placement_spread.py,
#                run by hand: the same ratio on several fresh placements of the operands in one process;
#                benchmarks/measurement-trust/flush_and_placement.py, run by hand: the same ratio under each flush size, flush value
#                and operand layout kerntune's measurement and the check differ in; benchmarks/measurement-trust/gate_step_state.py,
#                run by hand: the check's ratio before and after its own gate step, every call's time kept.)
# flush-dirty-lines: (GPU) whether a flush that writes costs the timed kernel its write-backs: the decode shapes
#                (M <= 32 of benchmarks/specs/llm_gemm_shapes.txt) — torch.mm, FLUSH_REPORT's winners (default the
#                2026-12-05 05:26 12 s/shape run) and a read of the weight — timed by CUPTI after a 2×L2 fill
#                (kerntune's flush), the fill then a 2×L2 read (clean L2), and the read alone, interleaved
#                (benchmarks/measurement-trust/flush_dirty_lines.py); then, where ncu is installed, the read kernel's DRAM bytes read
#                and written after each flush (ncu --cache-control none --clock-control none).
# ab-power:      AA (20) A/A verdicts and SLOW (10) planted-slowdown verdicts, each one `kerntune ab --json`
#                process at default settings (benchmarks/measurement-trust/ab_power.py): on a GPU the planted bf16 matmul with 3.1%
#                more masked-off K work (benchmarks/specs/planted_matmul @EXTRA=0 vs @EXTRA=2), on a CPU the
#                OpenCL loop with 3% more iterations (examples/opencl_planted_slowdown @ITERS=200 vs @ITERS=206).
# ab-sources:    the same counts for two kernel SOURCES of one spec, timed in one worker: AA verdicts of a source
#                against a copy of it in another file, SLOW verdicts against a second source with the planted
#                slowdown and identical output — on a GPU the planted matmul's kernel with 2 more K iterations
#                (a copy of benchmarks/specs/planted_matmul/spec.py, edited), on a CPU busy.cl against
#                busy_slower.cl (3% more iterations) of examples/opencl_planted_slowdown.
# ab-fresh:      the same planted slowdown in fresh processes (--scheme fresh, PROCESSES per side, default 6): each
#                process times its side beside the spec's default config (the reference), interleaved.
# ab-power-fresh: AA (20) and SLOW (10) verdicts of ab-power in fresh processes beside the reference.
# ab-env:        (GPU) SLOW (10) verdicts (AA, default 0, A/A ones) of a slowdown planted by an environment variable (env:PLANTED_EXTRA=2, two
#                more K iterations of benchmarks/specs/planted_matmul), in fresh processes (PROCESSES, default 4, per
#                side), each timing its side beside torch.matmul (--reference @torch.matmul: cuBLAS, which the
#                variable leaves alone), interleaved.
# confirmation:  (GPU) `kerntune tune kernels/triton_gemm --strategy random --budget 24`: each finalist's
#                search-time median beside its median confirmed in fresh processes.
# repeat-tunes:  the same three shapes tuned REPEATS (5) times at TUNE_BUDGET, a fresh store each; every run's
#                winner scored against an interleaved oracle of all runs' finalists (benchmarks/measurement-trust/tune_reproducibility.py):
#                the winner-flip rate and each run's regret. On a GPU kernels/triton_gemm (bf16 M=16,N=K=4096,
#                4096³ and M=4096,N=14336,K=4096; 12s/shape), the oracle timed by profiler kernel records call by
#                call; on a CPU examples/opencl_matmul (128³, 256³, 512³; 8s/shape), the oracle `kerntune ab`.
planted() {
  if [ -n "$GPU" ]; then PLANTED=(benchmarks/specs/planted_matmul @EXTRA=0 @EXTRA=2)
  else PLANTED=(examples/opencl_planted_slowdown @ITERS=200 @ITERS=206); fi
}
step_repeatability() {
  [ -n "$GPU" ] || { note "  repeatability times a bf16 matmul: needs a GPU, skipped"; return 0; }
  local out; out=$(step_dir repeatability)
  bounded "${REPEAT_LIMIT:-200}" python3 benchmarks/measurement-trust/repeatability.py --out "$out/repeatability.json" \
    --variants "${VARIANTS:-250:0:5000}" > "$out/repeatability.log" 2>&1
  local code=$?
  tail -12 "$out/repeatability.log" >> "$LOG"
  return $code
}
step_ratio_repeatability() {
  [ -n "$GPU" ] || { note "  the ratio to torch.matmul times a bf16 matmul: needs a GPU, skipped"; return 0; }
  local out; out=$(step_dir ratio-repeatability)
  bounded "${RATIO_LIMIT:-300}" python3 benchmarks/measurement-trust/ratio_repeatability.py --rounds "${ROUNDS:-20}" \
    --shape "${RATIO_SHAPE:-M=4096,N=4096,K=4096,layout=NN}" \
    --winner "${WINNER:-BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,GROUP_M=8,TMA=1,PERSISTENT=1,num_warps=8,num_stages=3}" \
    --store "$W/ratio-store" --out "$out/ratio_repeatability.json" > "$out/ratio_repeatability.log" 2>&1
  local code=$?
  tail -4 "$out/ratio_repeatability.log" >> "$LOG"
  return $code
}
step_claims_check() {
  [ -n "$GPU" ] || { note "  claims-check times a bf16 matmul against cuBLAS: needs a GPU, skipped"; return 0; }
  local out shapes m nk; out=$(step_dir claims-check); shapes=""
  for m in 16 128 4096; do
    for nk in N=4096,K=4096 N=14336,K=4096 N=4096,K=14336; do shapes="$shapes --shape M=$m,$nk"; done
  done
  shapes="$shapes --shape M=8192,N=8192,K=8192"
  KERNTUNE_HOME="$W/claims-store" bounded "${CLAIMS_TUNE_LIMIT:-400}" python3 -m kerntune tune kernels/triton_gemm \
    --dtype bfloat16 $shapes --budget "${CLAIMS_BUDGET:-20s/shape}" --json > "$out/tune.json" 2> "$out/tune.err"
  [ -s "$out/tune.json" ] || KERNTUNE_HOME="$W/claims-store" python3 -m kerntune show last --json > "$out/tune.json"
  bounded "${CHECK_LIMIT:-300}" python3 benchmarks/measurement-trust/claims_check.py "$out/tune.json" "$out/claims_check.json" \
    "${BLOCKS:-100}" > "$out/claims_check.log" 2>&1
  local code=$?
  tail -12 "$out/claims_check.log" >> "$LOG"
  return $code
}
step_process_spread() {
  [ -n "$GPU" ] || { note "  process-spread times a bf16 matmul against cuBLAS: needs a GPU, skipped"; return 0; }
  local out i report=${CHECK_REPORT:-$D/claims-check/tune.json}; out=$(step_dir process-spread)
  [ -s "$report" ] || report=$(data_file benchmarks/data/measurement-trust/2026-12-04/h200-0449/checker-processes/tune128.json) || return 1
  note "  report: $report"
  for i in $(seq "${PROCESSES:-4}"); do
    bounded "${CHECK_LIMIT:-120}" python3 benchmarks/measurement-trust/claims_check.py "$report" "$out/check_$i.json" "${BLOCKS:-100}" \
      > "$out/check_$i.log" 2>&1
  done
  python3 - "$out" >> "$LOG" <<'PY'
import json, pathlib, statistics, sys
found = {}
for path in sorted(pathlib.Path(sys.argv[1]).glob("check_*.json")):
    for row in json.loads(path.read_text())["rows"]:
        if "checked" in row:
            s = row["shape"]
            found.setdefault(f"{s['M']}x{s['N']}x{s['K']}", []).append((row["checked"]["ratio"], row.get("printed")))
for shape, got in found.items():
    ratios = [r for r, _ in got]
    sd = statistics.stdev(ratios) / statistics.mean(ratios) if len(ratios) > 1 else float("nan")
    print(f"  {shape}: {len(ratios)} processes read {min(ratios):.4f}-{max(ratios):.4f} (SD {sd:.2%})"
          + ("" if got[0][1] is None else f"; kerntune printed {got[0][1]:.4f}"))
PY
}
step_sustained_load() {
  [ -n "$GPU" ] || { note "  sustained-load times a bf16 matmul under the power cap: needs a GPU, skipped"; return 0; }
  local out; out=$(step_dir sustained-load)
  bounded "${SUSTAIN_LIMIT:-120}" python3 benchmarks/measurement-trust/sustained_load_ratio.py "$out/sustained_load.json" \
    "${SUSTAIN_SHAPE:-8192,8192,8192}=${SUSTAIN_CONFIG:-BLOCK_M:128,BLOCK_N:256,BLOCK_K:64,GROUP_M:8,SPLIT_K:1,FUSED:0,TMA:1,PERSISTENT:1,num_warps:8,num_stages:3}" \
    > "$out/sustained_load.log" 2>&1
  local code=$?
  grep 'median ratio' "$out/sustained_load.log" >> "$LOG"
  return $code
}
# ab_power NAME SPEC A B [ab_power.py options]: AA A/A and SLOW planted-slowdown verdicts into $D/NAME/ (steps
# ab-power, ab-sources, ab-power-fresh, ab-env). CALIBRATED=1 skips the calibration verdicts: a second run of the
# step on the same machine, whose store already holds the bands.
ab_power() {
  local name=$1 spec=$2 a=$3 b=$4 out; shift 4; out=$(step_dir "$name")
  bounded "${AB_LIMIT:-500}" python3 benchmarks/measurement-trust/ab_power.py --spec "$spec" --slow-a "$a" --slow-b "$b" "$@" \
    --aa "${AA:-20}" --slow "${SLOW:-10}" --store "$W/$name-store" --out "$out/ab_power.jsonl" \
    ${CALIBRATED:+--no-calibration} > "$out/ab_power.log" 2>&1
  local code=$?
  tail -3 "$out/ab_power.log" >> "$LOG"
  return $code
}
step_flush_dirty_lines() {
  [ -n "$GPU" ] || { note "  flush-dirty-lines times decode GEMMs: needs a GPU, skipped"; return 0; }
  local out code=0 report
  report=$(data_file "${FLUSH_REPORT:-benchmarks/data/time-budget/2026-12-05/bounded-12s-0526/triton_matmul-12s-shape.json}") || return 1
  out=$(step_dir flush-dirty-lines)
  bounded "${FLUSH_LIMIT:-240}" python3 benchmarks/measurement-trust/flush_dirty_lines.py "$out/flush_dirty_lines.json" \
    --report "$report" > "$out/timing.log" 2>&1 || code=1
  grep -v -i warn "$out/timing.log" | tail -6 >> "$LOG"
  if command -v ncu > /dev/null; then
    # ncu's own flush off (the script's are the ones compared) and the clocks as found
    bounded 180 ncu --cache-control none --clock-control none --kernel-name read_kernel --csv \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
      python3 benchmarks/measurement-trust/flush_dirty_lines.py "$out/unused.json" --ncu > "$out/ncu.csv" 2> "$out/ncu.err" || code=1
    grep -c dram__bytes_write "$out/ncu.csv" >> "$LOG"
  else
    note "   ncu not installed: the DRAM byte count skipped"
  fi
  return $code
}
step_ab_power() { planted; ab_power ab-power "${PLANTED[@]}"; }
step_ab_sources() {
  local spec a b
  if [ -n "$GPU" ]; then
    spec=benchmarks/specs/planted_matmul; a="$W/planted_source.py"; b="$W/planted_source_slower.py"
    cp "$spec/spec.py" "$a"
    sed 's/+ EXTRA + PLANTED_EXTRA)/+ EXTRA + PLANTED_EXTRA + 2)/' "$spec/spec.py" > "$b"
    cmp -s "$a" "$b" && { note "  the planted edit did not apply to $spec/spec.py"; return 1; }
  else
    spec=examples/opencl_planted_slowdown; a="$spec/busy.cl"; b="$spec/busy_slower.cl"
  fi
  cp "$a" "$W/twin-$(basename "$a")"
  ab_power ab-sources "$spec" "$a" "$b" --twin "$W/twin-$(basename "$a")"
}
step_ab_fresh() {
  local out; out=$(step_dir ab-fresh); planted
  bounded "${FRESH_LIMIT:-240}" python3 -m kerntune ab --scheme fresh --processes "${PROCESSES:-6}" --spec "${PLANTED[@]}" \
    --expect loss --store "$W/ab-power-store" --json > "$out/ab_fresh.json" 2> "$out/ab_fresh.err"
  local code=$?
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('  fresh:', d['verdict'], d['reason'])" \
    "$out/ab_fresh.json" >> "$LOG" 2>&1
  return $(( code > 1 ? code : 0 ))  # exit 1 is a verdict (the slowdown not called a loss), logged above
}
step_ab_power_fresh() { planted; ab_power ab-power-fresh "${PLANTED[@]}" --scheme fresh; }
step_ab_env() {
  [ -n "$GPU" ] || { note "  ab-env plants the slowdown in a Triton kernel beside cuBLAS: needs a GPU, skipped"; return 0; }
  # Power only (AA=0 by default): the false-call rate of fresh processes beside a reference is ab-power-fresh's.
  AA=${AA:-0} ab_power ab-env benchmarks/specs/planted_matmul @EXTRA=0 env:PLANTED_EXTRA=2:@EXTRA=0 --scheme fresh \
    --reference @torch.matmul --processes "${PROCESSES:-4}"
}
step_confirmation() {
  [ -n "$GPU" ] || { note "  confirmation tunes triton_matmul: needs a GPU, skipped"; return 0; }
  local out; out=$(step_dir confirmation)
  KERNTUNE_HOME="$W/confirm-store" bounded "${CONFIRM_LIMIT:-170}" python3 -m kerntune tune kernels/triton_gemm \
    --strategy random --budget 24 --json > "$out/matmul.json" 2> "$out/matmul.err"
  local code=$?
  KERNTUNE_HOME="$W/confirm-store" python3 -m kerntune show last > "$out/matmul.txt" 2>&1
  head -45 "$out/matmul.txt" >> "$LOG"
  return $code
}
step_repeat_tunes() {
  local out; out=$(step_dir repeat-tunes)
  if [ -n "$GPU" ]; then
    set -- --spec kernels/triton_gemm --dtype bfloat16 --shape M=16,N=4096,K=4096 --shape M=4096,N=4096,K=4096 \
      --shape M=4096,N=14336,K=4096 --budget "${TUNE_BUDGET:-12s/shape}"
  else
    set -- --spec examples/opencl_matmul --shape M=128,N=128,K=128 --shape M=256,N=256,K=256 \
      --shape M=512,N=512,K=512 --budget "${TUNE_BUDGET:-8s/shape}"
  fi
  bounded "${REPEAT_TUNES_LIMIT:-1500}" python3 benchmarks/measurement-trust/tune_reproducibility.py "$@" --repeats "${REPEATS:-5}" \
    --out "$out" > "$out/repeat-tunes.log" 2>&1
  local code=$?
  rm -rf "$out"/store-*
  tail -5 "$out/repeat-tunes.log" >> "$LOG"
  return $code
}
