"""A program written for torch, not for kerntune: attention scores the eager way, ``q @ k.transpose(-1, -2)`` on
fp16 batches (``aten::bmm`` with B transposed), checked in float64; it exits 1 when a product is wrong."""

from __future__ import annotations

import torch

torch.manual_seed(0)
q, k = torch.randn(4, 16, 64).half(), torch.randn(4, 32, 64).half()
worst = 0.0
for _ in range(3):
    got, want = q @ k.transpose(-1, -2), q.double() @ k.double().transpose(-1, -2)
    worst = max(worst, float((got.double() - want).abs().max() / want.abs().max()))
print(f"max relative error {worst:.3g}")
raise SystemExit(0 if worst < 1e-2 else 1)
