#!/usr/bin/env bash
# Re-run gpu tests on the H200 after a fix (under 600 s): TESTS names them (pytest node ids or files), each file's
# log in $OUT with durations. Wheels: .whl (carry it).
set -u
OUT=${OUT:-/tmp/kt-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $(ls .whl/*.whl .whl/*/*.whl) \
  >/dev/null 2>&1
export PYTHONPATH="/tmp/site:$PWD/src:$PWD" PYTHONUNBUFFERED=1
i=0
for t in ${TESTS}; do
  i=$((i + 1))
  timeout "${EACH_S:-250}" python3 -m pytest "$t" -v -rA --durations=0 -p no:cacheprovider > "$OUT/tests_$i.log" 2>&1
  echo "rc $? ($t)" >> "$OUT/tests_$i.log"
done
