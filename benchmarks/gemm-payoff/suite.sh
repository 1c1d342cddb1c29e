# about: the payoff of the deployed multi-spec GEMM table (triton_gemm, gluon_gemm, cublaslt_gemm ranked per call) against torch.matmul, TunableOp and torch.compile max-autotune, side by side on 33 shapes (LLM suite, a training step, odd-N decode), each ratio checked by the profiler; and a training step served by kerntune run
# steps: scope tune deploy side train
# needs: gpu
# SHAPES_FILE: the shapes (default benchmarks/specs/gemm_payoff_shapes.txt: groups suite, training, decode-odd-n).
# PART=i/n (default 1/1): the tune and side steps take the i-th of n contiguous slices of the shapes (33 shapes x 3
#   specs outlast one 600 s device call; so does the side-by-side of 33 shapes). Any slicing works: the deploy
#   step takes every run kept, the side step's summary every part timed against the same table, in this call's
#   data ($D) and in earlier calls' (EARLIER_DATA, default benchmarks/data/gemm-payoff/<today>, unpacked there).
# scope:  `kerntune scope --region step --corpus` of benchmarks/gemm-payoff/train_step.py (TRAIN_STEPS, default
#         10, timed steps), then payoff_shapes.py check-corpus: is the file's training group the corpus' hottest
#         GEMMs by FLOPs x calls? (the step fails where it is not; the corpus says what to put in its place).
# tune:   `kerntune tune kernels/SPEC --dtype bfloat16 --budget PER_SHAPE` (default 12s/shape) for each SPEC of
#         SPECS (default "triton_gemm gluon_gemm cublaslt_gemm") over PART's shapes that the spec's constraints
#         admit (gluon_gemm's TMA takes no odd N); each run kept in the suite's store ($KERNTUNE_HOME), its report
#         kept as SPEC-partIofN.json and its winners deployed alone as SPEC-partIofN.table.json (a device
#         machine's store does not outlive it: the deploy step merges such a table where the run is not in the
#         store). TUNE_LIMIT (default 560) bounds each tune.
# deploy: one table of every run: `kerntune deploy RUN --table TABLE` run after run into one fresh TABLE (deploy
#         takes one run and merges it into an existing table, ranking the specs per call again each time), or,
#         for a run not in this store, its kept table merged by deploy's own merge
#         (benchmarks/gemm-payoff/merge_tables.py). The runs: TUNE_REPORTS (report paths), default every
#         *-part*of*.json under $D/tune*/ and under benchmarks/data/gemm-payoff/<today>/tune*/ (earlier calls'
#         data, unpacked), oldest first (a later run of a key replaces an earlier one's entry).
# side:   benchmarks/gemm-payoff/side_by_side.py on TABLE (default: the newest deploy*/table.json of $D, else of
#         benchmarks/data/gemm-payoff/<today>/) over PART's shapes, ROUNDS (default 96) rounds, SIDE_LIMIT
#         (default 570 s); then every part timed against that table so far (under $D and
#         benchmarks/data/gemm-payoff/<today>/side*/) merged into payoff.json, the acceptance printed.
# train:  the training step served: train_step.py (TRAIN_STEPS) under `kerntune scope --region step`, alone and under
#         `kerntune run --table TABLE` (TABLE as in side), each in a fresh process writing its losses; then `kerntune
#         verify` of the step under `kerntune run` (engagement, then the end-to-end A/B, table off against on, bounded
#         by TRAIN_AB_BUDGET, default 180s); then train_served.py judges: GEMM device time a step, every entry
#         engaged, losses within LOSS_GATE (default 0.01, relative), the A/B not a loss.
# SHAPE_GROUP: the tune and side steps take that group of the shapes file alone (suite, training or decode-odd-n);
#         their files are named SPEC-GROUP-partIofN and side-by-side-GROUP-partIofN.
PAYOFF=benchmarks/gemm-payoff
SHAPES=${SHAPES_FILE:-benchmarks/specs/gemm_payoff_shapes.txt}
# Earlier calls' data, unpacked into the tree (`benchmarks/run --unpack`): this day's by default; EARLIER_DATA names
# another day's folder (a run that crossed midnight UTC).
EARLIER=${EARLIER_DATA:-benchmarks/data/gemm-payoff/$(date -u +%F)}

_part_tag() { local part=${PART:-1/1}; echo "${SHAPE_GROUP:+$SHAPE_GROUP-}part${part%/*}of${part#*/}"; }

# found PATTERN: files matching PATTERN (plain or gzipped) under $EARLIER (earlier calls' data), then under $D (this
# call's), each folder's oldest first, each file once.
found() {
  local dirs="$D" d
  [ "$(cd "$EARLIER" 2>/dev/null && pwd)" = "$D" ] || dirs="$EARLIER $D"
  for d in $dirs; do
    # shellcheck disable=SC2086  # $1 is a glob
    ls -tr $d/$1 $d/$1.gz 2>/dev/null
  done | awk '!seen[$0]++'
}

# run_id REPORT: the run id of a `kerntune tune --json` report (plain or gzipped).
run_id() {
  local f; f=$(data_file "$1") || return 1
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run"]["id"])' "$f" 2>/dev/null
}

step_scope() {
  local out code; out=$(step_dir scope)
  bounded "${SCOPE_LIMIT:-300}" python3 -m kerntune scope --region step --corpus "$out/train.jsonl" --json \
    -- python3 $PAYOFF/train_step.py --steps "${TRAIN_STEPS:-10}" > "$out/scope.json" 2> "$out/scope.err"
  code=$?
  tail -2 "$out/scope.err" >> "$LOG"
  [ -s "$out/train.jsonl" ] || { note "   scope wrote no corpus"; return 1; }
  python3 $PAYOFF/payoff_shapes.py check-corpus "$SHAPES" "$out/train.jsonl" > "$out/check-corpus.log" 2>&1 || code=1
  cat "$out/check-corpus.log" >> "$LOG"
  note "   $(tail -1 "$out/check-corpus.log")"
  return $code
}

step_tune() {
  local out spec tag shapes id code=0; out=$(step_dir tune)
  mkdir -p "$W/tables"
  for spec in ${SPECS:-triton_gemm gluon_gemm cublaslt_gemm}; do
    tag="$spec-$(_part_tag)"
    shapes=$(python3 $PAYOFF/payoff_shapes.py args "$SHAPES" --spec "kernels/$spec" ${SHAPE_GROUP:+--group "$SHAPE_GROUP"} \
      --part "${PART:-1/1}" 2>> "$LOG") \
      || { note "   $spec: the shapes of part ${PART:-1/1} could not be read (the log says why)"; code=1; continue; }
    [ -n "$shapes" ] || { note "   $spec: no shape of part ${PART:-1/1} is one its constraints admit"; continue; }
    note "   $spec, part ${PART:-1/1}: $(( $(echo "$shapes" | wc -w) / 2 )) shapes"
    # shellcheck disable=SC2086  # $shapes is a list of arguments
    bounded "${TUNE_LIMIT:-560}" python3 -m kerntune tune "kernels/$spec" --dtype bfloat16 $shapes \
      --budget "${PER_SHAPE:-12s/shape}" --json > "$out/$tag.json" 2> "$W/$tag.err" || code=1
    grep -v '^{"event"' "$W/$tag.err" | tail -3 >> "$LOG"
    id=$(run_id "$out/$tag.json") || { note "   $spec: no report (see the log)"; code=1; continue; }
    rm -f "$W/tables/$tag".*
    if bounded 120 python3 -m kerntune deploy "$id" --table "$W/tables/$tag.json" >> "$LOG" 2>&1; then
      cp "$W/tables/$tag.json" "$out/$tag.table.json"  # the JSON only: the .py and .inc say the same
    else
      note "   $spec: run $id deployed nothing (see the log)"; code=1
    fi
  done
  return $code
}

step_deploy() {
  local out table reports r id base kept=0 code=0; out=$(step_dir deploy)
  table="$W/deploy/table.json"; mkdir -p "$W/deploy"; rm -f "$W/deploy/table".*
  reports=${TUNE_REPORTS:-$(found 'tune*/*-part*of*.json' | grep -v '\.table\.json')}
  [ -n "$reports" ] || { note "   no tune report under $D/tune* nor $EARLIER/tune*: run the tune step first"; return 1; }
  for r in $reports; do
    id=$(run_id "$r") || { note "   $r: not a tune report"; code=1; continue; }
    if bounded 120 python3 -m kerntune deploy "$id" --table "$table" >> "$LOG" 2>&1; then
      kept=$((kept + 1)); continue
    fi
    # A run tuned on another machine is not in this store: the table the tune step deployed from it is merged.
    base=${r%.gz}; base=${base%.json}
    if [ -e "$base.table.json" ] || [ -e "$base.table.json.gz" ]; then
      if python3 $PAYOFF/merge_tables.py "$table" "$(data_file "$base.table.json")" >> "$LOG" 2>&1; then
        note "   run $id is not in this store: its table ${base##*/}.table.json merged"; kept=$((kept + 1)); continue
      fi
    fi
    note "   run $id: not deployed (the log says why) and no table of it merged: left out"; code=1
  done
  [ -s "$table" ] && cp "$table" "$out/table.json"
  note "   $kept of $(echo "$reports" | wc -w) runs in $out/table.json"
  return $code
}

step_side() {
  local out tag table parts p code; out=$(step_dir side); tag=$(_part_tag)
  table=${TABLE:-$(found 'deploy*/table.json' | tail -1)}
  [ -n "$table" ] && table=$(data_file "$table") \
    || { note "   no table: run the deploy step first or give TABLE=PATH"; return 1; }
  note "   table $table, part ${PART:-1/1}"
  bounded "${SIDE_LIMIT:-570}" python3 $PAYOFF/side_by_side.py --table "$table" --shapes "$SHAPES" \
    --out "$out/side-by-side-$tag.json" ${SHAPE_GROUP:+--group "$SHAPE_GROUP"} --part "${PART:-1/1}" \
    --rounds "${ROUNDS:-96}" \
    > "$out/side-by-side-$tag.log" 2>&1
  code=$?
  grep -v -i warn "$out/side-by-side-$tag.log" | grep -v '^ACCEPTANCE' | tail -40 >> "$LOG"
  # Every part timed so far; merge keeps those of the table and shapes file of the part that finished last.
  parts=""
  for p in $(found 'side*/side-by-side-*part*of*.json'); do parts="$parts $(data_file "$p")"; done
  [ -n "$parts" ] || { note "   no part was written"; return 1; }
  # shellcheck disable=SC2086  # $parts is a list of paths
  python3 $PAYOFF/side_by_side.py --merge "$out/payoff.json" $parts > "$out/payoff.log" 2>&1 || code=1
  cat "$out/payoff.log" >> "$LOG"
  grep '^ACCEPTANCE' "$out/payoff.log" | while read -r line; do note "   $line"; done
  return $code
}

step_train() {
  local out table step served code=0; out=$(step_dir train)
  table=${TABLE:-$(found 'deploy*/table.json' | tail -1)}
  [ -n "$table" ] && table=$(data_file "$table") \
    || { note "   no table: run the deploy step first or give TABLE=PATH"; return 1; }
  note "   table $table"
  step=(python3 $PAYOFF/train_step.py --steps "${TRAIN_STEPS:-10}")
  served=(python3 -m kerntune run --table "$table" --spec-dir "$PWD/kernels" --)
  bounded "${SCOPE_LIMIT:-300}" python3 -m kerntune scope --region step --json -- "${step[@]}" \
    --losses "$out/library-losses.json" > "$out/library-scope.json" 2> "$out/library-scope.err" || code=1
  bounded "${SCOPE_LIMIT:-300}" python3 -m kerntune scope --region step --json -- "${served[@]}" "${step[@]}" \
    --losses "$out/served-losses.json" > "$out/served-scope.json" 2> "$out/served-scope.err" || code=1
  bounded "${VERIFY_LIMIT:-420}" python3 -m kerntune verify --json --budget "${TRAIN_AB_BUDGET:-180s}" \
    --report "$out/verify.json" -- "${served[@]}" "${step[@]}" > "$out/verify.log" 2>&1 || code=1
  python3 $PAYOFF/train_served.py --library "$out/library-scope.json" --served "$out/served-scope.json" \
    --library-losses "$out/library-losses.json" --served-losses "$out/served-losses.json" \
    --verify "$out/verify.json" --loss-gate "${LOSS_GATE:-0.01}" --out "$out/train-served.json" \
    > "$out/train-served.log" 2>&1 || code=1
  cat "$out/train-served.log" >> "$LOG"
  grep '^ACCEPTANCE' "$out/train-served.log" | while read -r line; do note "   $line"; done
  return $code
}
