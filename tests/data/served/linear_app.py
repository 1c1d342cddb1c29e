"""A program written for torch, not for kerntune: fp16 nn.Linear layers on the CPU (with and without a bias), a
torch.mm of another shape, and a float64 check of every output. It prints the largest relative error last and
exits 1 when an output is wrong. ``kerntune run --backend CPU`` serves it under Triton's interpreter."""

from __future__ import annotations

import torch

torch.manual_seed(0)
x = torch.randn(32, 64).half()
with_bias, without = torch.nn.Linear(64, 64).half(), torch.nn.Linear(64, 128, bias=False).half()
other = torch.randn(64, 16).half()
worst = 0.0
for _ in range(3):
    for got, want in (
        (with_bias(x), x.double() @ with_bias.weight.double().t() + with_bias.bias.double()),
        (without(x), x.double() @ without.weight.double().t()),
        (torch.mm(x, other), x.double() @ other.double()),
    ):
        worst = max(worst, float((got.double() - want).abs().max() / want.abs().max()))
print(f"max relative error {worst:.3g}")
raise SystemExit(0 if worst < 1e-2 else 1)
