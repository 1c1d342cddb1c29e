__kernel void axpy(__global const float* x, __global const float* y, __global float* out, const float alpha,
                   const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    float acc = x[i];
    for (int k = 0; k < 4000; ++k) acc = acc * 0.999f + 1.0f;  // work whose result is never stored
    out[i] = alpha * x[i] + y[i];
    if (acc == -12345.0f) out[i] = 0.0f;  // never true: it keeps the loop alive, and the output identical
}
