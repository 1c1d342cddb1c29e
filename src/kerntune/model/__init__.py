"""The nouns of kerntune: plain data, no I/O, no heavy imports.

Problem (what is tuned) → Space (where to look) → Config (one point) → Candidate (a Config compiled for a
Target and a shape) → Measurement (raw samples under recorded Conditions) and Verdict (gate outcome) → Run
(one tuning session in the store).
"""

from kerntune.model.measurement import Conditions, FailureKind, Measurement, Verdict, median_ci
from kerntune.model.point import Config, Meta, Scalar, Shape
from kerntune.model.problem import (
    Baseline,
    Cost,
    CudaKernel,
    HipKernel,
    InputMaker,
    Kernel,
    NativeKernel,
    OpenCLKernel,
    Problem,
    Reference,
    Serve,
    TorchCallable,
    TritonKernel,
    VulkanKernel,
)
from kerntune.model.run import Budget, Candidate, CandidateRole, CandidateStatus, Run, RunStatus
from kerntune.model.space import Constraint, Derived, Space
from kerntune.model.target import Target

__all__ = [
    "Baseline",
    "Budget",
    "Candidate",
    "CandidateRole",
    "CandidateStatus",
    "Conditions",
    "Config",
    "Constraint",
    "Cost",
    "CudaKernel",
    "Derived",
    "FailureKind",
    "HipKernel",
    "InputMaker",
    "Kernel",
    "Measurement",
    "Meta",
    "NativeKernel",
    "OpenCLKernel",
    "Problem",
    "Reference",
    "Run",
    "RunStatus",
    "Scalar",
    "Serve",
    "Shape",
    "Space",
    "Target",
    "TorchCallable",
    "TritonKernel",
    "Verdict",
    "VulkanKernel",
    "median_ci",
]
