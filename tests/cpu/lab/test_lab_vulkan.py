"""The lab on a Vulkan compute dispatch made through kerntune's Vulkan backend, on a real Vulkan device (Mesa's
lavapipe on the CPU): the 2nd of a program's three dispatches captured with its GLSL, constants, defines and
dispatch shape; replayed in the three modes to the very SPIR-V that ran; another define and a source variant
compared, timed A B B A by the timestamps; the variant saved over the source string in the spec file the program
loaded, which then prints what it printed before; a miss names what dispatched; a variant that changes the
bindings is refused in one line."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import DATA, EXAMPLES, CliResult
from tests.cpu.backends.test_vulkan import _needs_vulkan  # noqa: F401  (the autouse skip / CI failure)

PROGRAM = DATA / "lab" / "vulkan_program.py"


def test_a_vulkan_dispatch_captured_replayed_compared_and_saved(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    spec = tmp_path / "spec.py"
    shutil.copyfile(EXAMPLES / "vulkan_reduction" / "spec.py", spec)
    program = ["--", sys.executable, str(PROGRAM), str(spec)]
    before = subprocess.run([sys.executable, str(PROGRAM), str(spec)], capture_output=True, text=True, check=True)
    missed = kerntune("lab", "capture", "--kernel", "reduce_max", "-o", str(tmp_path / "none"), *program)
    assert missed.code == 2 and "reduce_sum ×3" in missed.stderr, missed.stderr
    cap = tmp_path / "cap"
    done = kerntune("lab", "capture", "--kernel", "reduce_sum", "--nth", "2", "-o", str(cap), "--json", *program)
    assert done.code == 0, done.stderr
    manifest = done.json()
    identity = manifest["kernel"]
    assert identity["language"] == "vulkan" and identity["file"] == str(spec.resolve())
    assert identity["arg_names"] == ["binding 0", "binding 1", "binding 2", "binding 3", "push_constant"]
    assert manifest["options"] == {"WG": 64, "ITEMS": 1, "VEC": 1} and manifest["local"] == [64, 1, 1]
    assert manifest["arguments"]["n"] == {"kind": "scalar", "dtype": "uint32", "value": 1 << 16}
    assert manifest["arguments"]["x"]["dtype"] == "float32" and manifest["device"]["type"] == "vulkan"
    for mode in ("isolated", "sustained", "replays"):
        result = kerntune("lab", "replay", str(cap), "--mode", mode, "--iterations", "10", "--repeats", "2", "--json")
        assert result.code == 0, result.stderr
        replayed = result.json()
        assert replayed["reproduces_capture"] is True and replayed["timing_claimed"] is True, replayed
        assert replayed["resources"]["same_binary_as_captured"] is True
    # Another define on the captured dispatch shape: two items per invocation over the same workgroups add the
    # same numbers in another order, so the total's bits (and the partials) differ — validation names where.
    other = kerntune("lab", "compare", str(cap), "--set", "ITEMS=2", "--iterations", "10", "--json")
    assert other.code in (0, 1), other.stderr
    compared_set = other.json()
    assert (
        compared_set["interleaved"]["pairs"] == 10
        and compared_set["variant_result"]["resources"]["same_binary_as_captured"] is False
    )
    source = identity["source"]
    variant = tmp_path / "variant.comp"
    variant.write_text(source.replace("float acc = 0.0;", "float acc = 0.0;  // a variant: same arithmetic", 1))
    compared = kerntune("lab", "compare", str(cap), "--variant", str(variant), "--iterations", "10", "--json")
    assert compared.code == 0, compared.stderr
    row = compared.json()
    assert row["validation"] == {"passed": True, "rule": "bitwise"}, row["validation"]
    assert row["interleaved"]["pairs"] == 10 and row["ratio"] > 0
    rebound = tmp_path / "rebound.comp"
    rebound.write_text(source.replace("binding = 3", "binding = 4"))
    refused = kerntune("lab", "compare", str(cap), "--variant", str(rebound), "--iterations", "5")
    assert refused.code == 2 and "another signature" in refused.stderr, refused.stderr
    saved = kerntune("lab", "save", str(cap), "--variant", str(variant), "--json")
    assert saved.code == 0, saved.stderr
    assert "a variant: same arithmetic" in spec.read_text()
    after = subprocess.run([sys.executable, str(PROGRAM), str(spec)], capture_output=True, text=True, check=True)
    assert after.stdout == before.stdout
    closed = kerntune("lab", "close", str(cap), "--json")
    assert closed.code == 0 and "inputs.safetensors" in closed.json()["removed"], closed.stderr
