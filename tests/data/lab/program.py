"""A live program for the lab tests: launches scale_add three times (y is a view at an offset into a larger
buffer; its config comes from a kerntune Dispatcher, reading the table named by the first argument if any) and
accumulate once, then prints a checksum. LAB_DEVICE=cuda runs it on a GPU (compiled, not interpreted)."""

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import accumulate, scale_add

from kerntune.runtime import Dispatcher, kernel_hash
from kerntune.runtime.table import Table

blocks = Dispatcher(
    sys.argv[1] if len(sys.argv) > 1 else Table(),
    key=lambda n: (n,),
    key_fields=("n",),
    default={"BLOCK": 32},
    device={"op": "scale_add", "source": kernel_hash(scale_add)},
)
n, block = 100, 32
config = blocks.select(n)
grid = (-(-n // config["BLOCK"]),)
torch.manual_seed(0)
device = os.environ.get("LAB_DEVICE", "cpu")
x, big = torch.rand(n).to(device), torch.rand(n + 16).to(device)
y = big[16 : 16 + n]
total = 0.0
for step in range(3):
    out = torch.empty(n, device=device)
    scale_add[grid](x, y, out, n, ALPHA=2.0 + step, **config)
    total += float(out.sum())
accumulate[lambda meta: (-(-n // meta["BLOCK"]),)](x, n, BLOCK=block)  # no dispatcher: save --set refuses
print(f"checksum {total + float(x.sum()):.4f}")
