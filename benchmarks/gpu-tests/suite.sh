# about: every test marked gpu, one log per test with durations: what must pass on the H200 before GPU code lands
# steps: tests
# needs: gpu
# TESTS: the files or node ids to run (default every file under tests/gpu); a file is split into its tests, each run
# alone under EACH_S (400) seconds, so one slow or hung test still leaves the others' results (a file's tests
# together can outlast one bound: tests/gpu/lab took over 400 s); TOTAL_S (560) bounds the step.
step_tests() {
  local files t ids id log_name code=0 end=$(( $(date +%s) + ${TOTAL_S:-560} )) left
  files=${TESTS:-$(find tests/gpu -name 'test_*.py' | sort)}
  for t in $files; do
    case $t in
      *::*) ids=$t ;;
      *) ids=$(python3 -m pytest --collect-only -q -p no:cacheprovider "$t" 2>/dev/null | grep '::') \
           || { note "  $t: no test collected"; code=1; continue; } ;;
    esac
    for id in $ids; do
      left=$(( end - $(date +%s) ))
      [ "$left" -ge 20 ] || { note "  no time left for $id"; code=1; continue; }
      log_name=$(echo "${id#tests/gpu/}" | tr '/:' '__' | sed 's/\.py//')
      bounded $(( left < ${EACH_S:-400} ? left : ${EACH_S:-400} )) python3 -m pytest "$id" -v -rA --durations=0 \
        -p no:cacheprovider > "$D/$log_name.log" 2>&1 || code=1
      tail -1 "$D/$log_name.log" >> "$LOG"
      pack  # each test's log comes back even when the call is cut later (pack reads $name: the suite's)
    done
  done
  return $code
}
