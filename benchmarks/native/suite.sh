# about: the CUDA C++ backend on the GPU: a reduction against the calibrated copy bandwidth, and Kernel Tuner side by side on the same source and space
# steps: reduction kernel-tuner
# needs: gpu
# reduction:     `kerntune calibrate`, then `kerntune tune examples/cuda_reduction --strategy exhaustive` (N = 2^26
#                floats); the winner's bandwidth as a fraction of the calibrated copy, torch.sum in the same run.
# kernel-tuner:  benchmarks/native/kt_side_by_side.py on examples/cuda_matmul (fp32 2048³): Kernel Tuner brute force (its
#                defaults) and kerntune exhaustive on the spec's own source and space, both winners through
#                `kerntune ab`, Kernel Tuner's cache imported. Needs kernel_tuner and its dependencies carried as
#                wheels (.whl/kt); EARLIER= a summary of a cut run to continue.
step_reduction() {
  bounded "${CALIBRATE_LIMIT:-120}" python3 -m kerntune calibrate --json > "$D/calibrate.json" 2>> "$LOG"
  bounded "${REDUCTION_LIMIT:-170}" python3 -m kerntune tune examples/cuda_reduction --strategy exhaustive --json \
    > "$D/reduction.json" 2>> "$LOG"
}
step_kernel_tuner() {
  python3 -c "import kernel_tuner, cupy" 2>/dev/null || { note "  kernel_tuner or cupy missing (carry them in .whl/kt)"; return 1; }
  local out; out=$(step_dir kernel-tuner)
  bounded "${KT_LIMIT:-400}" python3 benchmarks/native/kt_side_by_side.py "$out" ${EARLIER:-} >> "$LOG" 2>&1
}
