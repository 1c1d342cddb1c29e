"""A live program for the lab tests: launches scale_add three times (y is a view at an offset into a larger
buffer) and accumulate once, then prints a checksum."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import accumulate, scale_add

n, block = 100, 32
grid = (-(-n // block),)
torch.manual_seed(0)
x, big = torch.rand(n), torch.rand(n + 16)
y = big[16:16 + n]
total = 0.0
for step in range(3):
    out = torch.empty(n)
    scale_add[grid](x, y, out, n, ALPHA=2.0 + step, BLOCK=block)
    total += float(out.sum())
accumulate[lambda meta: (-(-n // meta["BLOCK"]),)](x, n, BLOCK=block)
print(f"checksum {total + float(x.sum()):.4f}")
