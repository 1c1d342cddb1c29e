# about: every test marked gpu, one log per test file with durations: what must pass on the H200 before GPU code lands
# steps: tests
# needs: gpu
# TESTS: the files or node ids to run (default every file under tests/gpu); each file runs alone under EACH_S (400)
# seconds, so one slow or hung file still leaves the others' results; TOTAL_S (560) bounds the step.
step_tests() {
  local files t log_name code=0 end=$(( $(date +%s) + ${TOTAL_S:-560} )) left
  files=${TESTS:-$(find tests/gpu -name 'test_*.py' | sort)}
  for t in $files; do
    left=$(( end - $(date +%s) ))
    [ "$left" -ge 20 ] || { note "  no time left for $t"; code=1; continue; }
    log_name=$(echo "${t#tests/gpu/}" | tr '/:' '__' | sed 's/\.py//')
    bounded $(( left < ${EACH_S:-400} ? left : ${EACH_S:-400} )) python3 -m pytest "$t" -v -rA --durations=0 \
      -p no:cacheprovider > "$D/$log_name.log" 2>&1 || code=1
    tail -1 "$D/$log_name.log" >> "$LOG"
    pack  # each file's log comes back even when the call is cut later (pack reads $name: the suite's)
  done
  return $code
}
