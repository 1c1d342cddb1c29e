# Sourced by benchmarks/run before a suite: what every suite shares. A suite script defines one shell function
# per step (step_NAME) and reads these:
#   ROOT      the repository root (the working directory)
#   D         this run's raw-data folder for the suite: $KT_DATA/<suite>/<date>/ (created); a step writes under
#             $D/<step>/ (``step_dir``), never into another run's folder
#   W         a scratch folder for stores, Triton caches and copies of the tree (never packed)
#   LOG       the suite's log: each step's start, limit, exit code and wall time, the device's state
#   GPU       1 where nvidia-smi sees a GPU, else empty (suites that need one say so and skip)
# and these helpers: bounded, step_dir, data_file, device_state, export_candidates, note.
set -u
ROOT=$(pwd)
# Wheels carried to a machine without PyPI (.whl and its subfolders) are installed beside the tree, once per run.
# (compgen, not ls: ls fails when one of its two patterns matches nothing, which skipped the install.)
if { compgen -G '.whl/*.whl' || compgen -G '.whl/*/*.whl'; } >/dev/null && [ ! -e /tmp/site/.kerntune-wheels ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $(ls .whl/*.whl .whl/*/*.whl 2>/dev/null) \
    >/dev/null 2>&1 && touch /tmp/site/.kerntune-wheels
fi
export PYTHONPATH="/tmp/site:$ROOT/src:$ROOT" PYTHONUNBUFFERED=1
GPU=""; command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && GPU=1

# note: a line for the log and the terminal (fd 3, the runner's own stdout: a step's stdout may be a data file).
note() { echo "$*" >> "$LOG"; echo "$*" >&3; }

# The device's state as found (clocks, power, temperature, throttle reasons): at a suite's start and end, so a
# figure can be read against the power state it ran under. Clocks are never changed.
device_state() {
  if [ -n "$GPU" ]; then
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active \
      --format=csv,noheader >> "$LOG" 2>&1
  else
    echo "no GPU: $(uname -m), $(nproc) cores" >> "$LOG"
  fi
}

# bounded SECONDS CMD...: run CMD under a time limit (a step that runs long never takes the rest of the suite
# down) and log its exit code and wall time.
bounded() {
  local limit=$1; shift
  local start=$(date +%s.%N)
  timeout "$limit" "$@"
  local code=$?
  note "  exit $code after $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" \
    "$start" "$(date +%s.%N)") s (limit $limit s): $*"
  return $code
}

# step_dir NAME: a fresh folder for one step's files under $D (NAME-2, NAME-3 ... when a run the same day has one).
step_dir() {
  local dir="$D/$1" i=2
  while [ -e "$dir" ]; do dir="$D/$1-$i"; i=$((i + 1)); done
  mkdir -p "$dir"; echo "$dir"
}

# export_candidates STORE_FOLDER CSV: every candidate of a store as CSV (the SQLite store stays in $W).
export_candidates() { python3 benchmarks/export_candidates.py "$1" "$2" >> "$LOG" 2>&1; }

# data_file PATH: a raw-data file as a plain file a script can read: PATH itself, or PATH.gz unpacked under $W/data/
# (benchmarks/data keeps raw files over 4 KB gzipped). Prints the path; a note and failure where neither exists.
data_file() {
  local path=${1%.gz}
  if [ -f "$path" ]; then echo "$path"; return 0; fi
  [ -f "$path.gz" ] || { note "   no raw-data file $path (nor $path.gz)"; return 1; }
  local out="$W/data/${path#/}"
  mkdir -p "$(dirname "$out")" && gunzip -c "$path.gz" > "$out" && echo "$out"
}
