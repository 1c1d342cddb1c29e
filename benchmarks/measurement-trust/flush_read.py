"""The clean flush's second half: a read of a whole buffer in one kernel of its own name, no memset beside it.

After a flush that writes, the L2 holds the writer's dirty lines; reading another buffer at least the L2's size
writes them back during this read and leaves clean lines, so the next timed call pays no write-back
(benchmarks/measurement-trust/flush_dirty_lines.py measures whether that matters). torch's own reductions will not do:
a reduction to one value launches a memset for its semaphores beside its kernel, which a trace split by flush records
would count as the next call's work. Each program sums a contiguous block and writes one int32.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

KERNEL_NAME = "flush_read_kernel"
"""The kernel's name in a profiler trace (a regex that matches it matches no GEMM's or library kernel's)."""


@triton.jit
def flush_read_kernel(src_ptr, sums_ptr, numel, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(sums_ptr + tl.program_id(0), tl.sum(tl.load(src_ptr + offsets, mask=offsets < numel, other=0), axis=0))


class CleanRead:
    """``CleanRead(nbytes)()`` reads ``nbytes`` of zeros on the current CUDA device, one launch."""

    BLOCK = 16384

    def __init__(self, nbytes: int) -> None:
        self.src = torch.zeros(nbytes // 4, dtype=torch.int32, device="cuda")
        self.grid = (triton.cdiv(self.src.numel(), self.BLOCK),)
        self.sums = torch.empty(self.grid[0], dtype=torch.int32, device="cuda")

    def __call__(self) -> None:
        flush_read_kernel[self.grid](self.src, self.sums, self.src.numel(), BLOCK=self.BLOCK, num_warps=8)
