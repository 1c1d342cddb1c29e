import triton
import triton.language as tl


@triton.jit
def scale_add(x_ptr, y_ptr, out_ptr, n, ALPHA: tl.constexpr, BLOCK: tl.constexpr):
    # the same result, the loads in the other order
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask)
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * ALPHA + y, mask=mask)
