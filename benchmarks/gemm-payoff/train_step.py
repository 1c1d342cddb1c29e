"""A Hugging Face training step as a user writes it, nothing in it knowing kerntune: ``transformers``'
LlamaForCausalLM built from a LlamaConfig at TinyLlama-1.1B's sizes (hidden 2048, intermediate 5632, 32 heads,
4 KV heads, vocabulary 32000) with 4 layers and random weights (nothing is downloaded), float32 weights under bf16
autocast, AdamW, 2 sequences of 1024 random tokens a step (T = 2048 rows through every projection), the loss of
the model's own causal-LM head.

    python benchmarks/gemm-payoff/train_step.py [--steps 10] [--warmup 2] [--batch 2] [--seq 1024] [--layers 4]
        [--hidden 2048] [--intermediate 5632] [--heads 32] [--kv-heads 4] [--vocab 32000] [--device cuda]
        [--losses PATH]

Every timed step (forward, backward, optimizer step) runs inside ``torch.profiler.record_function("step")``, as
examples/hf_llama/app.py's do: ``kerntune scope --region step`` counts the steady state only (building the model,
AdamW's first step, which allocates its state, and the other warm-up steps lie outside). The last line printed is
milliseconds per step. ``--losses PATH`` writes every step's loss (warm-up steps first) as a JSON list, read
after the last step (no sync inside the timed steps). ``--device cpu`` with tiny sizes runs on the host (bf16
autocast on the CPU), for tests.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from torch.profiler import record_function
from transformers import LlamaConfig, LlamaForCausalLM


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--intermediate", type=int, default=5632)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--device", default="cuda")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--losses", type=Path)
    args = p.parse_args()
    if args.steps < 1 or args.warmup < 0:
        p.error("--steps must be at least 1 and --warmup at least 0")
    device = torch.device(args.device)
    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        vocab_size=args.vocab,
        max_position_embeddings=max(2048, args.seq),
    )
    with device:  # random weights drawn on the device (drawn on the host, a billion parameters take seconds)
        model = LlamaForCausalLM(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    ids = torch.randint(0, args.vocab, (args.batch, args.seq), generator=torch.Generator().manual_seed(1)).to(device)

    def step() -> torch.Tensor:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss: torch.Tensor = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    losses = [step() for _ in range(args.warmup)]  # AdamW's state, cuBLAS's handles: outside the timed steps
    sync()
    start = time.perf_counter()
    for _ in range(args.steps):
        with record_function("step"):
            loss = step()
        losses.append(loss)
    sync()
    elapsed = time.perf_counter() - start
    if args.losses is not None:
        args.losses.write_text(json.dumps([float(x) for x in losses]))
    print(f"loss {float(loss):.4f} after {args.warmup + args.steps} steps")
    print(f"{elapsed / args.steps * 1e3:.4f} ms per training step")


if __name__ == "__main__":
    main()
