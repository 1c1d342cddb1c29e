__kernel void axpy(__global const float* x, __global const float* y, __global float* out, const float alpha,
                   const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float b = y[i], a = x[i];  // the loads in the other order: the same arithmetic
    out[i] = alpha * a + b;
}
