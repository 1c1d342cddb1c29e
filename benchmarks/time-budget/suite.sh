# about: a time budget bounds the whole run, confirmation included: wall time by phase against the bound, and what confirmation had to cut
# steps: bounded winners against-max-autotune unbounded time-matched policy-replay
# needs: any
# On a GPU: kernels/triton_gemm at the shapes of SHAPES_FILE (default benchmarks/specs/llm_gemm_shapes.txt, 20
# LLM shapes), bf16, each budget of BUDGETS (default "12s/shape"); on a CPU: three GEMM shapes of
# examples/opencl_matmul at BUDGETS (default "5s/shape 10s/shape"). Default protocol, 3 confirmation rounds, a
# fresh store per budget: each report (its run's phases and stop reason) and its JSON-lines progress are kept,
# with the command's own wall time in the log.
# winners (GPU): the latest bounded run's winners (labelled this-run; BOUNDED_REPORT names another run's) and
# those of WINNER_REPORTS ("LABEL=PATH ...", other runs' reports, e.g. another tree's) timed side by side against
# torch.matmul in one process by benchmarks/gemm/gemm_forms.py (CUPTI kernel durations, torch/config/config/torch
# blocks): two trees' searches compared on what they chose, not on their own timers. The same config chosen by
# two runs is timed twice (an A/A). Then the latest run's printed ratios against that timing
# (benchmarks/time-budget/printed_vs_independent.py).
# unbounded (GPU): the same command without --budget (the search ends where its plateau rule says, confirmation
# runs all its rounds), for the winners a budget must not cost more than 1% against. Twenty shapes outlast one
# device call, so PART=i/n (default 1/1) runs the i-th of n contiguous slices of the shapes, each its own report;
# the winners step times the parts as one run when WINNER_REPORTS gives them one label
# ("unbounded=PART1.json unbounded=PART2.json ...").
# against-max-autotune (GPU): the bounded run's winners, torch.compile max-autotune (tuned from an empty cache, its
# tuning time per shape recorded), the Triton tutorial's triton.autotune (16 configs, tuned per shape, both layouts
# through B's strides; not on a shape with a bias) and torch.mm, gated and timed call by call interleaved by CUPTI
# kernel durations (benchmarks/time-budget/against_max_autotune.py).
# time-matched (GPU): the bounded step at max-autotune's own tuning time a shape: the mean of the per-shape times
# of an against-max-autotune run (MATCH_SIDE_BY_SIDE, default the 2026-12-05 05:31 run's side-by-side.json) as
# --budget Xs/shape, which leaves start-up out on both sides (benchmarks/time-budget/against_max_autotune.py's matched_budget).
# Then run against-max-autotune on its report, which times max-autotune's tuning again beside it.
# policy-replay (any machine): benchmarks/time-budget/search_policy_replay.py on the candidates of REPLAY_CANDIDATES (default
# the unbounded parts of 2026-12-05, 05:36–05:47 UTC): the local search as the tuner runs it and a best-first
# variant, each proposal answered from the recorded screens, at 30, 60 and 100 screens a shape, 20 seeds.
# shape_args [I N]: --shape arguments for the GPU's shapes (SHAPES_FILE): all of them, or the I-th of N contiguous
# slices, as even as whole shapes allow.
shape_args() {
  grep -v '^#' "${SHAPES_FILE:-benchmarks/specs/llm_gemm_shapes.txt}" | grep . | awk -v i="${1:-1}" -v n="${2:-1}" \
    '{ s[NR] = $0 } END { for (k = 1; k <= NR; k++) if (int((k - 1) * n / NR) + 1 == i) printf "--shape %s ", s[k] }'
}

# tune_kept OUT TAG LIMIT ARGS...: `kerntune tune ARGS --json` in a fresh store under LIMIT seconds; its report,
# JSON-lines progress and candidates kept in OUT as TAG.*, the store removed.
tune_kept() {
  local out=$1 tag=$2 limit=$3 code; shift 3
  KERNTUNE_HOME="$W/store-$tag" bounded "$limit" python3 -m kerntune tune "$@" --json > "$out/$tag.json" 2> "$out/$tag.err"
  code=$?
  grep '^{"event"' "$out/$tag.err" > "$out/$tag.progress.jsonl"
  export_candidates "$W/store-$tag" "$out/$tag-candidates.csv"
  rm -rf "$W/store-$tag"
  return $code
}

step_bounded() {
  local out spec shapes b code=0; out=$(step_dir bounded)
  if [ -n "$GPU" ]; then
    spec=kernels/triton_gemm; BUDGETS=${BUDGETS:-12s/shape}; shapes="--dtype bfloat16 $(shape_args)"
  else
    spec=examples/opencl_matmul; shapes="--shape M=64,N=64,K=64 --shape M=128,N=128,K=128 --shape M=256,N=256,K=256"
  fi
  for b in ${BUDGETS:-5s/shape 10s/shape}; do
    # shellcheck disable=SC2086  # $shapes is a list of arguments
    tune_kept "$out" "$(basename "$spec")-$(echo "$b" | tr '/' '-')" 600 "$spec" $shapes --budget "$b" || code=1
  done
  return $code
}

# latest_report: BOUNDED_REPORT when set (a bounded run's report kept in the tree: the winners and
# against-max-autotune steps on a machine that did not run it), else the newest report under $D/bounded*.
latest_report() {
  if [ -n "${BOUNDED_REPORT:-}" ]; then echo "$BOUNDED_REPORT"; return; fi
  ls -t "$(ls -td "$D"/bounded*/ 2>/dev/null | head -1)"triton_matmul-*.json 2>/dev/null | head -1
}

step_winners() {
  local out report; out=$(step_dir winners); report=$(latest_report)
  if [ -z "$GPU" ]; then note "   winners needs a GPU: skipped"; return 0; fi
  [ -s "$report" ] || { note "   no triton_matmul report under $D/bounded* (nor BOUNDED_REPORT): run the bounded step first"; return 1; }
  # shellcheck disable=SC2046  # WINNER_REPORTS is a list of words, one report each
  bounded "${WINNERS_LIMIT:-240}" python3 benchmarks/gemm/gemm_forms.py "$out/winners.json" --forms '' \
    --shapes "${SHAPES_FILE:-benchmarks/specs/llm_gemm_shapes.txt}" --report "this-run=$report" \
    $(for r in ${WINNER_REPORTS:-}; do printf -- '--report %s ' "$r"; done) --limit-s $(( ${WINNERS_LIMIT:-240} - 40 )) \
    > "$out/winners.log" 2>&1
  local code=$?
  grep -v -i warn "$out/winners.log" | tail -22 >> "$LOG"
  # the run's printed ratios (and its events') against that independent timing of the same configs
  python3 benchmarks/time-budget/printed_vs_independent.py "$report" "$out/winners.json" this-run \
    --json "$out/printed-vs-independent.json" > "$out/printed-vs-independent.log" 2>&1 || code=1
  tail -2 "$out/printed-vs-independent.log" >> "$LOG"
  return $code
}

step_against_max_autotune() {
  local out report; out=$(step_dir against-max-autotune)
  report=$(latest_report)
  if [ -z "$GPU" ]; then note "   against-max-autotune needs a GPU: skipped"; return 0; fi
  [ -s "$report" ] || { note "   no triton_matmul report under $D/bounded* (nor BOUNDED_REPORT): run the bounded step first"; return 1; }
  bounded 600 python3 benchmarks/time-budget/against_max_autotune.py "$report" "$out/side-by-side.json" > "$out/side-by-side.log" 2>&1
}

step_unbounded() {
  local out part n i shapes; out=$(step_dir unbounded)
  part=${PART:-1/1}; i=${part%/*}; n=${part#*/}
  if ! [[ $i =~ ^[0-9]+$ && $n =~ ^[0-9]+$ ]] || [ "$i" -lt 1 ] || [ "$i" -gt "$n" ]; then
    note "   PART=$part: give i/n, the i-th of n slices of the shapes (1 <= i <= n)"; return 1
  fi
  shapes=$(shape_args "$i" "$n")
  [ -n "$shapes" ] || { note "   PART=$part holds no shape"; return 1; }
  note "   part $i of $n: ${shapes//--shape /}"
  if [ -z "$GPU" ]; then note "   unbounded needs a GPU: skipped"; return 0; fi
  # shellcheck disable=SC2086  # $shapes is a list of arguments
  tune_kept "$out" "triton_matmul-unbounded-part${i}of${n}" "${UNBOUNDED_LIMIT:-560}" kernels/triton_gemm \
    --dtype bfloat16 $shapes
}

step_time_matched() {
  local file budget
  if [ -z "$GPU" ]; then note "   time-matched needs a GPU: skipped"; return 0; fi
  file=$(data_file "${MATCH_SIDE_BY_SIDE:-benchmarks/data/time-budget/2026-12-05/against-max-autotune-0531/side-by-side.json}") || return 1
  budget=$(python3 benchmarks/time-budget/against_max_autotune.py --matched-budget "$file" 2>> "$LOG") || {
    note "   MATCH_SIDE_BY_SIDE=$file: no max-autotune tuning times to match (an against-max-autotune run's side-by-side.json)"
    return 1; }
  note "   max-autotune's mean tuning time a shape in $file: --budget $budget"
  BUDGETS=$budget step_bounded
}

step_policy_replay() {
  local out files="" f; out=$(step_dir policy-replay)
  for f in ${REPLAY_CANDIDATES:-$(ls benchmarks/data/time-budget/2026-12-05/unbounded-0536/*-candidates.csv*)}; do
    files="$files $(data_file "$f")" || return 1
  done
  # shellcheck disable=SC2086  # $files is a list of paths
  bounded "${REPLAY_LIMIT:-900}" python3 benchmarks/time-budget/search_policy_replay.py $files --json "$out/replay.json" \
    > "$out/replay.log" 2>&1
  local code=$?
  tail -1 "$out/replay.log" >> "$LOG"
  return $code
}
