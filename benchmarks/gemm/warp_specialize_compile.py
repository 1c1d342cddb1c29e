"""Does the installed Triton warp-specialize a Hopper TMA GEMM loop, and in which form? Cross-compiles (no GPU
needed) for sm_90 a TMA GEMM shaped like kernels/triton_gemm's TMA kernel, its K loop as
``tl.range(..., warp_specialize=WS, num_stages=S)``, in each form that matters to the example: descriptors made on
the host (the example's ``TensorDescriptor.from_tensor``) or in the kernel (``tl.make_tensor_descriptor``, which
needs ``triton.set_allocator`` at launch), B row-major (NN) or an ``nn.Linear`` weight read transposed (NT), 4 or 8
warps. Per form it prints whether the compiled TTGIR holds ``ttg.warp_specialize`` (the loop was split into a
TMA producer and wgmma consumers), how many ``setmaxnreg`` the PTX has (the register hand-off between them) and
the shared memory, or the compiler's error.

Usage: python benchmarks/gemm/warp_specialize_compile.py [--block 128,128,64] [--stages 3]"""

from __future__ import annotations

import argparse
import itertools
import sys

import triton
import triton.language as tl


@triton.jit
def tma_gemm_kernel(
    a,
    b,
    c,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,  # type: ignore[no-untyped-def]
    BLOCK_K: tl.constexpr,
    IN_KERNEL: tl.constexpr,
    B_T: tl.constexpr,
    WS: tl.constexpr,
    STAGES: tl.constexpr,
):
    # IN_KERNEL: a, b, c are pointers and the descriptors are made here; else they are the host's descriptors.
    if IN_KERNEL:
        a_desc = tl.make_tensor_descriptor(a, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
        if B_T:
            b_desc = tl.make_tensor_descriptor(b, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
        else:
            b_desc = tl.make_tensor_descriptor(b, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
        c_desc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    else:
        a_desc, b_desc, c_desc = a, b, c
    pid_m = tl.program_id(0) % tl.cdiv(M, BLOCK_M)
    pid_n = tl.program_id(0) // tl.cdiv(M, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(tl.cdiv(K, BLOCK_K), warp_specialize=WS, num_stages=STAGES):
        x = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        if B_T:
            acc = tl.dot(x, b_desc.load([pid_n * BLOCK_N, k * BLOCK_K]).T, acc)
        else:
            acc = tl.dot(x, b_desc.load([k * BLOCK_K, pid_n * BLOCK_N]), acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.bfloat16))


def compile_once(
    block: tuple[int, int, int], stages: int, device_descriptors: bool, b_t: bool, warps: int, ws: bool
) -> str:
    """One form cross-compiled for sm_90: what its TTGIR and PTX show, or the compiler's last error line."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    bm, bn, bk = block
    scalars = {"M": "i32", "N": "i32", "K": "i32"}
    constexprs = {
        "BLOCK_M": bm,
        "BLOCK_N": bn,
        "BLOCK_K": bk,
        "IN_KERNEL": device_descriptors,
        "B_T": b_t,
        "WS": ws,
        "STAGES": stages,
    }
    b_block = (bn, bk) if b_t else (bk, bn)
    operands = (
        {"a": "*bf16", "b": "*bf16", "c": "*bf16"}
        if device_descriptors
        else {
            "a": f"tensordesc<bf16[{bm}, {bk}]>",
            "b": f"tensordesc<bf16[{b_block[0]}, {b_block[1]}]>",
            "c": f"tensordesc<bf16[{bm}, {bn}]>",
        }
    )
    signature = {**operands, **scalars, **dict.fromkeys(constexprs, "constexpr")}
    try:
        # FP fusion named: left to Triton's default, 3.9 warns (an error where warnings are) and the form "fails".
        options = {"num_warps": warps, "num_stages": stages, "enable_fp_fusion": True}
        compiled = triton.compile(
            ASTSource(tma_gemm_kernel, signature, constexprs=constexprs),
            target=GPUTarget("cuda", 90, 32),
            options=options,
        )
    except Exception as exc:  # the compiler's own failure is the finding
        return f"failed: {str(exc).strip().splitlines()[-1][:120]}"
    specialized = "ttg.warp_specialize" in compiled.asm["ttgir"]
    return (
        f"{'SPECIALIZED' if specialized else 'not specialized'}; setmaxnreg "
        f"{compiled.asm['ptx'].count('setmaxnreg')}, shared {compiled.metadata.shared} B"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--block", default="128,128,64")
    parser.add_argument("--stages", type=int, default=3)
    opts = parser.parse_args()
    try:
        bm, bn, bk = (int(x) for x in opts.block.split(","))
    except ValueError:
        print("warp_specialize_compile: --block is BLOCK_M,BLOCK_N,BLOCK_K, e.g. 128,128,64", file=sys.stderr)
        return 2
    print(f"Triton {triton.__version__}, sm_90, {bm}x{bn}x{bk}, {opts.stages} stages")
    for device, b_t, warps, ws in itertools.product((False, True), (False, True), (4, 8), (False, True)):
        found = compile_once((bm, bn, bk), opts.stages, device, b_t, warps, ws)
        print(
            f"  {'device' if device else 'host'} descriptors, {'NT' if b_t else 'NN'}, {warps} warps, "
            f"warp_specialize={ws}: {found}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
