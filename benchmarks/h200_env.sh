# Sourced by the benchmarks/h200_*.sh scripts, after they set NAME (and STEPS' default in DEFAULT_STEPS): $OUT
# (what comes back from the device), a work folder $W, the log $OUT/$NAME.log, the carried wheels (.whl and its
# subfolders) installed beside the tree, kerntune's store in $W, step/want helpers, and the device's state first.
set -u
OUT=${OUT:-/tmp/kt-out}
W=${W:-/tmp/w-$NAME}
mkdir -p "$OUT" "$W"
LOG="$OUT/$NAME.log"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $(ls .whl/*.whl .whl/*/*.whl 2>/dev/null) \
  >/dev/null 2>&1
export PYTHONPATH="/tmp/site:$PWD/src:$PWD" PYTHONUNBUFFERED=1 KERNTUNE_HOME="$W/store"
STEPS=${STEPS:-${DEFAULT_STEPS:-}}  # a subset runs only those steps
step() { echo "== $(date +%T) $*" | tee -a "$LOG"; }
want() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv; git log --oneline -1; } >> "$LOG"
