"""A torch.compile'd program on the GPU, written for torch, not for kerntune: a bf16 nn.Linear without a bias (Inductor
calls an extern GEMM for it, aten::mm.out) followed by a GELU and an affine step (a pointwise Triton kernel Inductor
generates and names). It prints its output's checksum; the lab's GPU test captures both kinds of launch from it."""

from __future__ import annotations

import torch

torch.manual_seed(0)
linear = torch.nn.Linear(256, 512, bias=False, device="cuda", dtype=torch.bfloat16)


def step(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(linear(x)) * 2 + 1


compiled = torch.compile(step)
x = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
with torch.no_grad():
    for _ in range(4):
        y = compiled(x)
torch.cuda.synchronize()
print(f"checksum {float(y.float().sum()):.6g}")
