"""What does a kernel of `kernels/triton_gemm` compile to when Triton knows the shape, as Inductor's kernels
do? Cross-compiles (no GPU needed) for sm_90 the example's MMA kernel (``matmul_kernel``, cp.async loads) or its
GEMV kernel at a shape and config, once as the kernel declares its arguments (the MMA kernel's integers at run time,
as the JIT specializes them by ``kerntune inspect``'s rules: divisibility by 16, a value of 1; the GEMV kernel has
taken its shape and strides as constexprs since 2026-12-05) and once per set of arguments given as constexprs, and
prints per build: registers, spilled loads and stores (``LDL``/``STL``), the SASS instruction count of the longest
loop (the K loop; 0 where the compiler unrolled it whole) and of the whole kernel, and the ``bar.sync`` count of
the PTX.

Usage: python benchmarks/gemm/k_loop_sass.py [--kernel matmul|gemv] [--shape M,N,K] [--tile BM,BN,BK,WARPS,STAGES]
       [--constexprs K "M,N,K" ...]
Layout NT (B an nn.Linear weight's transpose), bf16. For ``gemv`` the tile is ROWS-padded BLOCK_N,BLOCK_K (BM is
ignored). Exit 2 on bad arguments or a failed compile (its message on stderr)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

SASS_LINE = re.compile(r"/\*[0-9a-f]{4}\*/")


def example() -> Any:
    """The example's spec module, loaded as kerntune loads it."""
    from kerntune.tune.spec import load_spec

    return sys.modules[load_spec(ROOT / "kernels" / "triton_gemm").problem.make_inputs.__module__]


def arguments(kernel: str, m: int, n: int, k: int, tile: tuple[int, ...]) -> dict[str, Any]:
    """Every argument of the kernel by name, as a launch at layout NT passes it (small host tensors stand in for the
    operands: only their dtype and 16-byte alignment reach the compiler)."""
    import torch

    bm, bn, bk = tile[:3]
    operand = torch.empty(8, dtype=torch.bfloat16)
    pointers = {"a_ptr": operand, "b_ptr": operand, "c_ptr": operand, "bias_ptr": operand}
    shape = {
        "M": m,
        "N": n,
        "K": k,
        "stride_am": k,
        "stride_ak": 1,
        "stride_bk": 1,
        "stride_bn": k,
        "stride_cm": n,
        "stride_cn": 1,
    }
    if kernel == "gemv":
        rows = 1 << (m - 1).bit_length()
        return {**pointers, **shape, "ROWS": rows, "BLOCK_N": bn, "BLOCK_K": bk, "HAS_BIAS": False}
    return {
        **pointers,
        "ws_ptr": torch.empty(8),
        "lock_ptr": torch.empty(8, dtype=torch.int32),
        **shape,
        "stride_ab": 0,
        "stride_bb": 0,
        "stride_cb": 0,
        "BLOCK_M": bm,
        "BLOCK_N": bn,
        "BLOCK_K": bk,
        "GROUP_M": 8,
        "SPLIT_K": 1,
        "FUSED": 0,
        "HAS_BIAS": False,
    }


def build(fn: Any, values: dict[str, Any], constexprs: set[str], warps: int, stages: int) -> Any:
    """``fn`` compiled for sm_90 as the JIT would compile this launch (``kerntune inspect``'s specialization), with
    the arguments named in ``constexprs`` fixed besides."""
    from kerntune.backends.triton_cross import cross_compile_source
    from kerntune.inspect.resources import compile_inputs

    names = list(fn.arg_names)
    signature, fixed, attrs, _ = compile_inputs(fn, tuple(values[name] for name in names), {})
    for name in constexprs:
        signature[name], fixed[name] = "constexpr", values[name]
        attrs.pop((names.index(name),), None)
    return cross_compile_source(fn, signature, fixed, attrs, "sm_90", {"num_warps": warps, "num_stages": stages})


def longest_loop(sass: str) -> int:
    """SASS instructions from a label to the furthest backward branch to it (a loop), the longest such span."""
    lines = sass.splitlines()
    labels = {m.group(1): i for i, line in enumerate(lines) if (m := re.match(r"^\.(L_x_\d+):", line.strip()))}
    longest = 0
    for i, line in enumerate(lines):
        target = re.search(r"BRA\s+(?:`\()?\.?(L_x_\d+)", line)
        if target and labels.get(target.group(1), i) < i:
            span = sum(1 for x in lines[labels[target.group(1)] : i + 1] if SASS_LINE.search(x))
            longest = max(longest, span if span > 1 else 0)  # a lone BRA to itself ends every kernel
    return longest


def read(compiled: Any) -> dict[str, int]:
    from kerntune.backends.cubin import nvidia_tool

    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(compiled.asm["cubin"])
        cubin.flush()
        sass = subprocess.run(
            [nvidia_tool("nvdisasm"), "-c", cubin.name], capture_output=True, text=True, check=True
        ).stdout
        usage = subprocess.run(
            [nvidia_tool("cuobjdump"), "-res-usage", cubin.name], capture_output=True, text=True, check=True
        ).stdout
    registers = re.search(r"REG:(\d+)", usage)
    lines = sass.splitlines()
    return {
        "registers": int(registers.group(1)) if registers else -1,
        "spill_ops": sum(1 for line in lines if re.search(r"\b(LDL|STL)\b", line)),
        "k_loop": longest_loop(sass),
        "instructions": sum(1 for line in lines if SASS_LINE.search(line)),
        "bar_sync": compiled.asm["ptx"].count("bar.sync"),
    }


def integers(text: str, count: int, what: str) -> tuple[int, ...]:
    try:
        found = tuple(int(x) for x in text.split(","))
    except ValueError:
        found = ()
    if len(found) != count or min(found) < 1:
        raise ValueError(f"{what} is {count} positive whole numbers, comma-separated: got {text!r}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", choices=("matmul", "gemv"), default="matmul")
    parser.add_argument("--shape", default="32,10240,8192")
    parser.add_argument("--tile", default="32,128,128,4,4")
    parser.add_argument(
        "--constexprs",
        nargs="*",
        default=["K", "M,N,K"],
        help="sets of arguments to fix, each comma-separated (a build per set)",
    )
    opts = parser.parse_args()
    try:
        m, n, k = integers(opts.shape, 3, "--shape")
        tile = integers(opts.tile, 5, "--tile")
    except ValueError as exc:
        print(f"k_loop_sass: {exc}", file=sys.stderr)
        return 2
    spec = example()
    fn = spec.gemv_kernel if opts.kernel == "gemv" else spec.matmul_kernel
    values = arguments(opts.kernel, m, n, k, tile)
    sets = [set()] + [{name.strip() for name in text.split(",") if name.strip()} for text in opts.constexprs]
    unknown = sorted(set().union(*sets) - set(values))
    if unknown:
        print(f"k_loop_sass: --constexprs names {', '.join(unknown)}, not arguments of {fn.__name__}", file=sys.stderr)
        return 2
    print(f"{fn.__name__} at {m}x{n}x{k} NT, tile {opts.tile} (BM,BN,BK,warps,stages), sm_90")
    for fixed in sets:
        try:
            found = read(build(fn, values, fixed, tile[3], tile[4]))
        except Exception as exc:  # the compiler's own failure is the finding
            print(f"k_loop_sass: {'+'.join(sorted(fixed)) or 'as declared'}: {exc}", file=sys.stderr)
            return 2
        label = "+".join(sorted(fixed)) + " constexpr" if fixed else "as declared"
        print(
            f"  {label}: registers {found['registers']}, spill ops {found['spill_ops']}, K loop {found['k_loop']}, "
            f"instructions {found['instructions']}, bar.sync {found['bar_sync']}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
