"""A capture's manifest (``manifest.json`` beside its safetensors files): what was launched, on what, with what.

One record for every kind of launch the lab captures (Triton, Inductor, OpenCL, CUDA C++ / HIP, Vulkan, an aten
operator); the keys a kind does not have are absent."""

from __future__ import annotations

from typing import TypedDict

from kerntune.lab.snapshot import ArgumentRecord, SnapshotTable

ScalarOption = bool | int | float | str | None


class DeviceRecord(TypedDict, total=False):
    type: str
    name: str
    arch: str
    compute_units: int
    memory: str


class KernelIdentity(TypedDict, total=False):
    """Where the kernel's definition lives and its text: what replay loads and ``lab save`` rewrites."""

    language: str
    name: str
    file: str | None
    first_line: int
    source: str | None
    source_hash: str | None
    file_sha256: str | None
    arg_names: list[str] | None
    template: str | None
    compile_options: list[str]
    arch: str
    device_arch: str
    entry: str
    spirv: str | None
    constants: dict[str, int]
    build_options: str
    overload: str
    schema: str
    call: str
    generated_file: str | None
    """Inductor: the generated module as it was, before its copy was kept in the capture folder."""


class InductorRecord(TypedDict):
    """The config torch.compile's autotuner ran, and how many it chose among."""

    kernel_name: str
    config: dict[str, ScalarOption]
    configs: int
    autotuned: bool


class DispatchRecord(TypedDict, total=False):
    """What a kerntune Dispatcher decided for the captured call (``runtime.dispatch.Dispatcher.describe``)."""

    name: str
    fields: dict[str, ScalarOption]
    key: str
    kind: str
    config: dict[str, ScalarOption]
    table: str
    table_sha256: str | None
    mode: str
    table_validators: dict[str, str]
    versions: dict[str, str]
    disabled: bool


class OthersRecord(TypedDict):
    count: int
    bytes: int


class Manifest(TypedDict, total=False):
    format: str
    version: int
    launch_of: int
    scope: str
    versions: dict[str, str]
    created: str
    kernel: KernelIdentity
    grid: list[int]
    local: list[int] | None
    block: list[int]
    shared_bytes: int
    options: dict[str, ScalarOption]
    positional: list[str]
    arguments: dict[str, ArgumentRecord]
    groups: int
    inputs_sha256: str
    interpreted: bool
    device: DeviceRecord
    dispatch: DispatchRecord
    """The kerntune Dispatcher selection that fed this launch (``runtime.dispatch.Dispatcher.describe``)."""
    others: OthersRecord
    binary_hash: str | None
    inductor: InductorRecord
    outputs_table: SnapshotTable
    closed: str
