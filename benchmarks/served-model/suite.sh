# about: the whole loop on an unmodified transformers Llama (examples/hf_llama, the H200 size): truthful scope eager and compiled, its corpus tuned, the table served by kerntune run, engagement by kernel identity, outputs against the table-less run, the end-to-end A/B, and the served call's host cost
# steps: scope tune engage abba cost partial variants
# needs: gpu
# scope:  `kerntune scope --region step --corpus` on decode (batch 16) and prefill (512 tokens), eager and
#         compiled (reduce-overhead for decode, default for prefill); each trace kept gzipped (test data for the
#         CPU tests of scope's reading).
# tune:   `kerntune tune kernels/triton_gemm --shapes-from` the corpus (top TOP shapes by GPU time,
#         default 12, PER_SHAPE each, default 20s/shape), then `kerntune deploy`.
# engage: per mode, the app without the table saves its logits; `kerntune verify --processes PROCESSES` of
#         `kerntune run --table` on it checks them (--check) and gives engagement and the end-to-end A/B.
# MODE_LIST: the modes run, as mode:compile words (all four).
# VERIFY_BUDGET: `--budget` for verify's A/B in place of --processes.
# APP_STEPS: the app's timed steps per run (30).
# abba:   per mode, benchmarks/served-model/served_abba.py: the app alone against it under `kerntune run --table`, PAIRS (5)
#         pairs of fresh processes in A B B A order, APP_STEPS steps each: the ratio of its ms per step and its
#         interval (no A/A band: verify's A/B has one, at twice the processes).
# cost:   benchmarks/served-model/serve_cost.py: a served call's host cost (miss and hit) over the library's, interleaved;
#         COST_CONFIG: the hit's kernel form (plain, or tma: serve_cost-tma.json), COST_ROUNDS (20).
# partial: the eager decode served a table of only some of its GEMM keys, so the other calls miss and pay the served
#          path's gate: steps tune (the top PARTIAL_TOP (3) decode keys, M = 16, of DECODE_CORPUS, scope's corpus of
#          2026-12-01; PARTIAL_TABLE: a table tuned so before, in place of this tune) and engage (decode, eager)
#          with VERIFY_BUDGET 180s; APP_STEPS 300 here.
# variants: where the partial table's time goes in that eager decode: the partial step's tune (unless its table is
#          already in $W, or PARTIAL_TABLE names one), then benchmarks/served-model/served_variants.py (VARIANT_ROUNDS, 1): the app alone, the
#          table off, the C++ gate, the Python gate, every call a miss, and the table without its TMA entries
#          (VARIANTS: a comma-separated subset), then the table off and on once each under the profiler;
#          APP_STEPS 300 here.
APP=examples/hf_llama/app.py
CORPUS=${CORPUS:-$W/llama.jsonl}  # scope writes it, tune reads it (a corpus from an earlier run: CORPUS=FILE STEPS=tune)
TABLE=${TABLE:-$W/llama-table.json}  # tune deploys it, engage serves it
read -r -a _modes <<< "${MODE_LIST:-decode:none decode:reduce-overhead prefill:none prefill:default}"
MODES=("${_modes[@]//:/ }")  # MODE_LIST="decode:reduce-overhead" runs only those modes (mode:compile)

_mode_args() {  # _mode_args "decode none" -> the app's arguments
  set -- $1
  echo "--mode $1 --compile $2 --steps ${APP_STEPS:-30}"
}

_tag() { echo "$1" | tr ' ' '-'; }

step_scope() {
  local out; out=$(step_dir scope)
  for mode in "${MODES[@]}"; do
    local tag; tag=$(_tag "$mode")
    bounded "${SCOPE_LIMIT:-240}" python3 -m kerntune scope --region step --corpus "$CORPUS" \
      --trace "$out/$tag.trace.json" --json -- python3 $APP $(_mode_args "$mode") > "$out/$tag.json" 2>> "$LOG"
    gzip -f "$out/$tag.trace.json" 2>/dev/null
  done
  cp "$CORPUS" "$out/llama.jsonl" 2>/dev/null
}

step_tune() {
  local out; out=$(step_dir tune)
  KERNTUNE_HOME="$W/store" bounded "${TUNE_LIMIT:-420}" python3 -m kerntune tune kernels/triton_gemm \
    --shapes-from "$CORPUS" --top "${TOP:-12}" --budget "${PER_SHAPE:-20s/shape}" --json \
    > "$out/tune.json" 2>> "$LOG"
  KERNTUNE_HOME="$W/store" bounded 60 python3 -m kerntune deploy last --table "$TABLE" \
    >> "$LOG" 2>&1
  cp "$TABLE" "$out/table.json" 2>/dev/null
}

step_engage() {
  local out; out=$(step_dir engage)
  for mode in "${MODES[@]}"; do
    local tag; tag=$(_tag "$mode")
    bounded 180 python3 $APP $(_mode_args "$mode") --save-logits "$W/$tag.pt" > "$out/$tag-plain.log" 2>&1
    KERNTUNE_HOME="$W/store" bounded "${ENGAGE_LIMIT:-300}" python3 -m kerntune verify --json \
      $(if [ -n "${VERIFY_BUDGET:-}" ]; then echo --budget "$VERIFY_BUDGET"; else echo --processes "${PROCESSES:-5}"; fi) \
      --report "$out/$tag-verify.json" -- \
      python3 -m kerntune run --table "$TABLE" --spec-dir kernels -- python3 $APP $(_mode_args "$mode") --check "$W/$tag.pt" \
      > "$out/$tag-verify.log" 2>&1
  done
}

step_abba() {
  local out; out=$(step_dir abba)
  for mode in "${MODES[@]}"; do
    local tag; tag=$(_tag "$mode")
    bounded "${ABBA_LIMIT:-540}" python3 benchmarks/served-model/served_abba.py --table "$TABLE" --pairs "${PAIRS:-5}" \
      --out "$out/$tag.json" -- python3 $APP $(_mode_args "$mode") > "$out/$tag.log" 2>&1
  done
}

step_cost() {
  local out; out=$(step_dir cost)
  local config=${COST_CONFIG:-plain} name=serve_cost
  [ "$config" = plain ] || name=serve_cost-$config
  bounded "${COST_LIMIT:-120}" python3 benchmarks/served-model/serve_cost.py --config "$config" \
    --rounds "${COST_ROUNDS:-20}" --out "$out/$name.json" > "$out/$name.log" 2>&1
}

# Bash scopes dynamically: the locals below are what step_tune and step_engage read.
_decode_keys() {  # the decode keys (M = 16) of DECODE_CORPUS into $W/decode-keys.jsonl
  local corpus; corpus=$(data_file "${DECODE_CORPUS:-benchmarks/data/served-model/2026-12-01/scope/llama.jsonl}") || return 1
  grep '"M": 16,' "$corpus" > "$W/decode-keys.jsonl"
}

step_partial() {
  _decode_keys || return 1
  local CORPUS=$W/decode-keys.jsonl TABLE=$W/partial-table.json TOP=${PARTIAL_TOP:-3} VERIFY_BUDGET=${VERIFY_BUDGET:-180s}
  local APP_STEPS=${APP_STEPS:-300}  # 30 steps (0.1 s) left the interval wide (history, 2026-12-07)
  local -a MODES=("decode none")
  if [ -n "${PARTIAL_TABLE:-}" ]; then
    cp "$PARTIAL_TABLE" "$TABLE" || return 1
  else
    step_tune
  fi
  step_engage
}

step_variants() {
  local out code; out=$(step_dir variants)
  local TABLE=${PARTIAL_TABLE:-$W/partial-table.json} APP_STEPS=${APP_STEPS:-300}
  if [ ! -s "$TABLE" ]; then
    _decode_keys || return 1
    local CORPUS=$W/decode-keys.jsonl TOP=${PARTIAL_TOP:-3}
    step_tune
  fi
  cp "$TABLE" "$out/partial-table.json" || return 1
  bounded "${VARIANTS_LIMIT:-420}" python3 benchmarks/served-model/served_variants.py --table "$TABLE" \
    --rounds "${VARIANT_ROUNDS:-1}" ${VARIANTS:+--only "$VARIANTS"} --profile --out "$out/variants.json" \
    -- python3 $APP $(_mode_args "decode none") > "$out/variants.log" 2>&1
  code=$?
  tail -7 "$out/variants.log" >> "$LOG"
  return $code
}
