// A compute-bound kernel whose time is its loop: c = 2a, plus ITERS dependent FMAs per element whose result
// is used only by a test the data never passes (so the compiler must keep the work).
__kernel void busy(const int n, __global const float* a, __global float* c) {
    const int i = get_global_id(0);
    if (i >= n) return;
    float acc = a[i];
    for (int k = 0; k < ITERS; k++) acc = fma(acc, 0.999f, 0.001f);
    c[i] = 2.0f * a[i] + (acc == -7.0f ? 1.0f : 0.0f);
}
