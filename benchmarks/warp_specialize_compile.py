"""Does the installed Triton warp-specialize a Hopper TMA GEMM loop? Cross-compiles (no GPU needed) a TMA kernel
shaped like examples/triton_matmul's, its K loop (or, persistent, its loop over output tiles as Triton's tutorial
writes it) as ``tl.range(..., warp_specialize=WS)``, for sm_90, and prints
what the PTX shows: wgmma and mbarrier instructions, and ``setmaxnreg`` (the register hand-off between a producer
warp group and its consumers that Hopper warp specialization uses), or the compiler's error.

Usage: python benchmarks/warp_specialize_compile.py [--block 128,128,64] [--warps 4 8] [--stages 3]"""

from __future__ import annotations

import argparse
import sys

import triton
import triton.language as tl


@triton.jit
def tma_loop_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # type: ignore[no-untyped-def]
                    BLOCK_K: tl.constexpr, WS: tl.constexpr):
    pid_m = tl.program_id(0) % tl.cdiv(M, BLOCK_M)
    pid_n = tl.program_id(0) // tl.cdiv(M, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WS):
        acc = tl.dot(a_desc.load([pid_m * BLOCK_M, k * BLOCK_K]), b_desc.load([k * BLOCK_K, pid_n * BLOCK_N]), acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.bfloat16))


@triton.jit
def tma_persistent_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr,  # type: ignore[no-untyped-def]
                          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, WS: tl.constexpr):
    # The tutorial's form for warp specialization: the loop over output tiles specialized, the K loop inside.
    tiles_m = tl.cdiv(M, BLOCK_M)
    for tile in tl.range(tl.program_id(0), tiles_m * tl.cdiv(N, BLOCK_N), tl.num_programs(0), flatten=True,
                         warp_specialize=WS):
        pid_m, pid_n = tile % tiles_m, tile // tiles_m
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(tl.cdiv(K, BLOCK_K)):
            acc = tl.dot(a_desc.load([pid_m * BLOCK_M, k * BLOCK_K]), b_desc.load([k * BLOCK_K, pid_n * BLOCK_N]),
                         acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.bfloat16))


def compile_once(bm: int, bn: int, bk: int, warps: int, stages: int, ws: bool, persistent: bool = False) -> str:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    def desc(rows: int, cols: int) -> str:
        return f"tensordesc<bf16[{rows}, {cols}]>"

    signature = {"a_desc": desc(bm, bk), "b_desc": desc(bk, bn), "c_desc": desc(bm, bn), "M": "i32", "N": "i32",
                 "K": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "WS": "constexpr"}
    source = ASTSource(tma_persistent_kernel if persistent else tma_loop_kernel, signature,
                       constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "WS": ws})
    try:
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                                  options={"num_warps": warps, "num_stages": stages})
    except Exception as exc:  # the compiler's own failure is the finding
        return f"failed: {str(exc).strip().splitlines()[-1][:160]}"
    ptx = compiled.asm["ptx"]
    return (f"compiled: wgmma {ptx.count('wgmma.mma_async')}, mbarrier {ptx.count('mbarrier')}, "
            f"setmaxnreg {ptx.count('setmaxnreg')}, shared {compiled.metadata.shared} B")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--block", default="128,128,64")
    parser.add_argument("--warps", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--stages", type=int, default=3)
    opts = parser.parse_args()
    try:
        bm, bn, bk = (int(x) for x in opts.block.split(","))
    except ValueError:
        print("warp_specialize_compile: --block is BLOCK_M,BLOCK_N,BLOCK_K, e.g. 128,128,64", file=sys.stderr)
        return 2
    print(f"Triton {triton.__version__}, sm_90, {bm}x{bn}x{bk}, {opts.stages} stages")
    for persistent in (False, True):
        for warps in opts.warps:
            for ws in (False, True):
                found = compile_once(bm, bn, bk, warps, opts.stages, ws, persistent)
                print(f"  {'persistent tile loop' if persistent else 'K loop'}, {warps} warps, "
                      f"warp_specialize={ws}: {found}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
