__kernel void axpy(__global const float* x, __global const float* y, __global float* out, const float alpha,
                   const int n) {
    const int i = get_global_id(0);
    if (i < n) out[i] = alpha * x[i] + y[(i + 1) % n];  // deliberately wrong index
}
