"""``Problem``: what is tuned — kernel descriptors, baselines, the input maker, reference and cost."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kerntune.model.point import Meta, Scalar
from kerntune.model.space import Space


@dataclass(frozen=True)
class Cost:
    """Work of one launch: floating-point operations and the fewest bytes it must move. ``matrix``: the dtype
    (``bfloat16``, ``float16``, ``tf32``, ``float32``, ``float8_e4m3fn``) when the FLOPs are matrix products
    meant for the matrix units; they are then held to the calibrated matrix rate of that dtype instead of the
    FMA rate."""

    flops: float = 0.0
    bytes: float = 0.0
    matrix: str | None = None


@dataclass(frozen=True)
class OpenCLKernel:
    """An OpenCL C kernel. Config and derived values become ``-D NAME=VALUE``; ``grid(meta)`` returns
    ``(global_size, local_size)`` (local may be None). Arguments are passed in the input maker's order."""

    source: str
    name: str
    grid: Callable[[Meta], tuple[Sequence[int], Sequence[int] | None]]
    build_options: Sequence[str] = ()
    language: Literal["opencl"] = "opencl"


@dataclass(frozen=True)
class NativeKernel:
    """A C++ kernel compiled at run time for a GPU: CUDA C++ (``CudaKernel``: NVRTC through cuda.core) or HIP
    (``HipKernel``: hiprtc through hip-python). Config and derived values become ``-D NAME=VALUE`` (defines)
    or, when ``template`` is given, the template arguments of the kernel named by ``template.format(**meta)``
    (e.g. ``"tile_matmul<{TILE}, {UNROLL}>"``). ``grid(meta)`` and ``block(meta)`` give the launch shape;
    ``shared_bytes(meta)`` the dynamic shared memory / LDS (on CUDA the 48 KB default is raised when more is
    asked). Arguments are passed in the input maker's order: tensors as device pointers, numpy scalars as their
    own type (give ``np.int64(n)``; a plain int is passed as int32, a float as float32). ``arch`` is the compile
    target (default: the device's, e.g. ``sm_90`` or ``gfx942``; give ``sm_90a`` for wgmma). ``options``: extra
    flags for the offline compiler (nvcc or hipcc, used where the run-time compiler is not installed)."""

    source: str
    name: str
    grid: Callable[[Meta], tuple[int, ...]]
    block: Callable[[Meta], tuple[int, ...]]
    shared_bytes: Callable[[Meta], int] | None = None
    template: str | None = None
    options: Sequence[str] = ()
    arch: str | None = None
    requires: Callable[[Meta], Sequence[str]] | None = None
    """ISA features a config needs (``wgmma``, ``tma``, ``mfma``, ``fp8``...: ``isa.targets.FEATURES``); a
    config whose target lacks one is refused before compiling (failure kind ``unsupported``)."""


@dataclass(frozen=True)
class CudaKernel(NativeKernel):
    """A CUDA C++ kernel for NVIDIA GPUs (see ``NativeKernel``)."""

    language: Literal["cuda"] = "cuda"


@dataclass(frozen=True)
class HipKernel(NativeKernel):
    """A HIP kernel for AMD GPUs (see ``NativeKernel``); a wavefront is 64 lanes on CDNA, 32 on RDNA: use
    ``warpSize``, never 32."""

    language: Literal["hip"] = "hip"


@dataclass(frozen=True)
class TritonKernel:
    """A ``triton.jit`` function. ``grid(meta)`` gives the launch grid; config values are passed as
    constexpr keyword arguments (``num_warps``, ``num_stages``, ``num_ctas``, ``maxnreg`` as launch options).
    ``launch(fn, args, meta)``, when given, replaces the default launch (multi-kernel schemes such as a
    split-K reduction) and may return the main compiled kernel for resource reporting."""

    fn: Any
    grid: Callable[[Meta], tuple[int, ...]]
    launch: Callable[[Any, dict[str, object], Meta], object] | None = None
    language: Literal["triton"] = "triton"


@dataclass(frozen=True)
class TorchCallable:
    """Any Python callable on device tensors, e.g. ``torch.matmul(a, b, out=c)``: ``fn(args, meta)``.

    With ``returns_outputs``, ``fn`` returns its outputs (one tensor, or a tuple in ``outputs`` order) instead
    of writing them into the output arguments, and the gate checks what it returned: for ops with no ``out=``,
    a copy into the output argument would add memory traffic the op does not do and slow the baseline.
    """

    fn: Callable[[dict[str, object], Meta], object]
    name: str = "torch"
    returns_outputs: bool = False
    language: Literal["torch"] = "torch"


@dataclass(frozen=True)
class VulkanKernel:
    """A Vulkan compute shader: ``source`` is GLSL (compiled to SPIR-V by glslang once per config, cached by hash,
    and checked by spirv-val) or SPIR-V itself (``bytes``). Config and derived values become ``#define NAME
    VALUE`` in GLSL, except those named in ``constants`` (NAME → ``constant_id``), which are given as specialization
    constants instead (32-bit: ints as int32, floats as float32): one module for every value, and how a SPIR-V
    shader is tuned. ``workgroup(meta)``
    gives the local size, passed as the specialization constants ``local_size_x_id = 100`` (y 101, z 102) that a
    shader may declare; ``dispatch(meta)`` the workgroup counts. Arguments, in the input maker's order: arrays are
    storage buffers of set 0 at bindings 0, 1, 2 ... in order; scalars (``np.int32``, ``np.uint32``,
    ``np.float32``) are packed in order into one push-constant block. ``entry``: the entry point's name."""

    source: str | bytes
    dispatch: Callable[[Meta], tuple[int, int, int]]
    workgroup: Callable[[Meta], tuple[int, int, int]] | None = None
    entry: str = "main"
    constants: Mapping[str, int] = field(default_factory=dict)
    name: str = ""
    """The name the dispatch is known by (reports, captures); default: the entry point's."""
    language: Literal["vulkan"] = "vulkan"

    @property
    def label(self) -> str:
        return self.name or self.entry


Kernel = OpenCLKernel | CudaKernel | HipKernel | TritonKernel | TorchCallable | VulkanKernel


@dataclass(frozen=True)
class Baseline:
    """What the winner is compared against, timed and gated side by side in the same run: a config of the
    problem's own space, or another implementation (e.g. ``torch.matmul``)."""

    name: str
    config: Mapping[str, Scalar] | None = None
    kernel: TorchCallable | None = None


@dataclass(frozen=True)
class Serve:
    """How a spec's tuned kernel takes calls of a library's operators in a program never written for kerntune
    (``kerntune run --table T.json -- python app.py``; ``kerntune.runtime.serve``).

    - ``ops``: the operator overloads it can take, as the dispatcher names them (``aten::mm``, ``aten::mm.out``,
      ``aten::addmm``...).
    - ``shape(op, args, kwargs)``: the call's key, ``(dtype, value of each shape field in the spec's order)``
      (e.g. ``("bfloat16", M, N, K, layout, bias)``), or None when this kernel cannot take the call (a layout,
      dtype, stride or scalar it does not handle): the library runs it. It runs on every call of the operators,
      covered or not, so it is host time on each; it must not synchronise the device or allocate (it runs inside
      CUDA graph capture). It must decide from the call's form alone (each tensor's dtype, device, sizes, strides
      and alignment up to 16 bytes; each scalar's value): serving's native gate asks it once per form.
    - ``run(op, shape, config, args, kwargs)``: launches the kernel at ``config`` and returns what the operator
      returns (for an ``.out`` overload, the ``out`` tensor it was given).
    - ``prepare(op, shape, config)`` (optional): called once per operator and key, at the key's first served call;
      returns the launcher ``(args, kwargs) -> result`` that takes that call and every later one of the key, so
      what the key fixes (grid, compiled kernel, constants) is decided once and a hit pays only its launch. A
      launcher that raises is a failure like ``run``'s. Without it every hit calls ``run``.
    """

    ops: Sequence[str]
    shape: Callable[[str, tuple[object, ...], dict[str, object]], tuple[object, ...] | None]
    run: Callable[[str, Mapping[str, Scalar], Mapping[str, object], tuple[object, ...], dict[str, object]], object]
    prepare: (
        Callable[
            [str, Mapping[str, Scalar], Mapping[str, object]], Callable[[tuple[object, ...], dict[str, object]], object]
        ]
        | None
    ) = None
    kernel: str = ""
    """The prefix the names of the kernels it launches share (``matmul`` for matmul_kernel, matmul_tma_kernel...):
    how ``kerntune verify`` finds them in a profile. Default: the spec kernel's name."""


InputMaker = Callable[[Mapping[str, Scalar], str, int], dict[str, object]]
Reference = Callable[[dict[str, object], Mapping[str, Scalar]], object]


@dataclass(frozen=True)
class Problem:
    """What is tuned. See ``examples/*/spec.py``.

    - ``make_inputs(shape, dtype, seed)`` returns the launch arguments in kernel order (arrays and scalars);
      it must draw random, non-zero data from ``seed``.
    - ``outputs`` names the arguments the kernel writes; they are poisoned before each checked run.
    - ``reference(args, shape)`` returns the expected outputs (one array, or a tuple in ``outputs`` order)
      computed in higher precision from the same inputs.
    - ``cost(shape, dtype)`` gives flops and bytes for speed-of-light figures.
    """

    name: str
    kernel: Kernel
    space: Space
    shapes: Sequence[Mapping[str, Scalar]]
    make_inputs: InputMaker
    reference: Reference
    outputs: Sequence[str]
    dtypes: Sequence[str] = ("float32",)
    cost: Callable[[Mapping[str, Scalar], str], Cost] | None = None
    baselines: Sequence[Baseline] = ()
    tolerance: Mapping[str, float] = field(default_factory=dict)
    """Per-dtype relative-error threshold overrides (see ``kerntune.tune.gate``)."""
    serve: Serve | None = None
    """The library operators this spec's kernel can take in an unmodified program (``kerntune run``)."""

    def __post_init__(self) -> None:
        from kerntune.errors import SpecError

        if not self.shapes:
            raise SpecError(f"problem {self.name!r} lists no shapes: give shapes=[{{...}}]")
        if not self.outputs:
            raise SpecError(f"problem {self.name!r} names no outputs: give outputs=('c',)")
        if not self.dtypes:
            raise SpecError(f"problem {self.name!r} lists no dtypes")

    @property
    def language(self) -> str:
        return self.kernel.language

    def shape_fields(self) -> tuple[str, ...]:
        return tuple(str(k) for k in self.shapes[0])

    def all_baselines(self) -> list[Baseline]:
        """The declared baselines, with the space's default config first when none names it."""
        declared = list(self.baselines)
        if not any(b.config is not None for b in declared):
            declared.insert(0, Baseline("default", config=self.space.default_config().as_dict()))
        return declared
