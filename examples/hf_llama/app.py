"""A Hugging Face Llama run the way its users run it — nothing in it knows kerntune. ``transformers``'
LlamaForCausalLM is built from a config with random weights (nothing is downloaded) and runs decode steps (one
token per sequence against a static KV cache) or prefills, eager or under ``torch.compile``.

    python examples/hf_llama/app.py [--mode decode|prefill] [--batch 16] [--tokens 512] [--steps 20]
        [--compile none|default|reduce-overhead|max-autotune] [--layers 4] [--hidden 4096]
        [--intermediate 14336] [--heads 32] [--kv-heads 8] [--vocab 32000] [--device cuda] [--dtype bfloat16]
        [--save-logits FILE] [--check FILE]

Every timed step runs inside ``torch.profiler.record_function("step")``: ``kerntune scope --region step`` counts
the steady state only (building the model, the prompt's prefill and the warm-up steps lie outside). A decode step
feeds the same token to the next cache slot (the cache holds the prompt and every step), so two runs of one command
compute the same sequence of logits. ``--save-logits`` keeps the last step's logits; ``--check FILE`` compares them
with saved ones and exits 1 beyond a relative error of 2e-2 (bf16 GEMMs of two libraries differ in rounding, not
more). The last line printed is milliseconds per step, which ``kerntune ab`` and ``kerntune verify`` read. The
default sizes are the H200 example's (hidden 4096, intermediate 14336, 8 KV heads, 4 layers, bf16).
"""

from __future__ import annotations

import argparse
import inspect
import time
from typing import Any

import torch
from torch.profiler import record_function
from transformers import LlamaConfig, LlamaForCausalLM

PROMPT = 32
CHECK_TOLERANCE = 2e-2


def _static_cache(model: Any, batch: int, length: int, device: torch.device, dtype: torch.dtype) -> Any:
    """A StaticCache, whichever transformers signature is installed (4.4x takes the batch, device and dtype)."""
    from transformers import StaticCache

    params = inspect.signature(StaticCache.__init__).parameters
    given: dict[str, Any] = {"config": model.config, "max_cache_len": length}
    for name, value in (("max_batch_size", batch), ("device", device), ("dtype", dtype)):
        if name in params:
            given[name] = value
    return StaticCache(**given)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=("decode", "prefill"), default="decode")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--tokens", type=int, default=512, help="prefill: tokens per sequence")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--compile", choices=("none", "default", "reduce-overhead", "max-autotune"), default="none")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--intermediate", type=int, default=14336)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", choices=("bfloat16", "float16"), default="bfloat16")
    p.add_argument("--save-logits")
    p.add_argument("--check")
    args = p.parse_args()
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        vocab_size=args.vocab,
        max_position_embeddings=max(2048, args.tokens + PROMPT + 1),
    )
    with device:  # random weights drawn on the device (on the host, 1.1 G parameters take seconds to draw)
        model = LlamaForCausalLM(config).to(dtype).eval()
    forward = (
        model.forward
        if args.compile == "none"
        else torch.compile(model.forward, mode=None if args.compile == "default" else args.compile)
    )
    ids = torch.randint(
        0,
        args.vocab,
        (args.batch, PROMPT if args.mode == "decode" else args.tokens),
        generator=torch.Generator().manual_seed(1),
    ).to(device)
    with torch.inference_mode():
        if args.mode == "decode":
            cache = _static_cache(model, args.batch, PROMPT + args.warmup + args.steps, device, dtype)
            # transformers 5 names the argument ``cache``; 4.x ``past_key_values``.
            name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
            model(input_ids=ids, use_cache=True, **{name: cache})
            token = ids[:, -1:].contiguous()

            def step() -> torch.Tensor:
                return forward(input_ids=token, use_cache=True, **{name: cache}).logits
        else:

            def step() -> torch.Tensor:
                return forward(input_ids=ids, use_cache=False).logits

        for _ in range(args.warmup):  # compiles, autotunes, records graphs: outside the timed steps
            logits = step()
        sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        sync()
        start = time.perf_counter()
        for _ in range(args.steps):
            with record_function("step"):
                logits = step().clone()  # a CUDA graph's output is overwritten by its next replay
        sync()
        elapsed = time.perf_counter() - start
    last = logits[:, -1].float().cpu()
    print(f"logits checksum {float(last.sum()):.6g} max {float(last.abs().max()):.6g}")
    if args.save_logits:
        torch.save(last, args.save_logits)
    if args.check:
        want = torch.load(args.check)
        error = float((last - want).abs().max() / want.abs().max())
        print(f"relative error against {args.check}: {error:.3g}")
        if error > CHECK_TOLERANCE:
            raise SystemExit(f"logits differ from {args.check} by {error:.3g} (more than {CHECK_TOLERANCE:g})")
    print(f"{elapsed / args.steps * 1e3:.4f} ms per {args.mode} step")


if __name__ == "__main__":
    main()
