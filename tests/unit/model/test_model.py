from __future__ import annotations

import pytest

from kerntune.errors import SpecError
from kerntune.model import Conditions, Config, Constraint, Measurement, Shape, Space, Target, median_ci

TARGET = Target("null", "none", "null-arch", "null device", 4)


def test_config_key_is_stable_and_hashable() -> None:
    a = Config.of({"BLOCK": 64, "WARPS": 4})
    b = Config.of({"BLOCK": 64, "WARPS": 4})
    assert a == b and hash(a) == hash(b)
    assert a.key == "BLOCK=64,WARPS=4"
    assert Config.of({"V": "x"}).key == "V='x'"
    assert a != Shape.of({"BLOCK": 64, "WARPS": 4})


def test_space_product_constraints_and_derived() -> None:
    space = Space(
        params={"A": [1, 2, 4], "B": [8, 16]},
        constraints=[
            Constraint(lambda c: c["A"] * c["B"] <= 32, "A*B <= 32"),
            lambda c, s: c["B"] <= s["N"],
            Constraint(lambda c, s, t: t is None or c["A"] <= t.compute_units, "fits CUs"),
        ],
        derived={"AB": lambda m: m["A"] * m["B"]},
    )
    assert space.size == 6
    valid, rejected = space.valid_configs(Shape.of({"N": 8}), TARGET)
    assert [c.key for c in valid] == ["A=1,B=8", "A=2,B=8", "A=4,B=8"]
    assert rejected == {"A*B <= 32": 1, "<lambda>": 2}
    meta = space.meta(Config.of({"A": 2, "B": 8}), Shape.of({"N": 8}))
    assert meta == {"N": 8, "A": 2, "B": 8, "AB": 16}
    assert space.tunables(Config.of({"A": 2, "B": 8}), Shape.of({"N": 8})) == {"A": 2, "B": 8, "AB": 16}


def _guarded(c: dict[str, int]) -> bool:
    try:  # a constraint's own handler must not swallow the walk's "not set yet" signal
        return c["C"] != 3 or c["A"] > 1
    except Exception:
        return False


def test_prefix_walk_keeps_exactly_the_configs_full_enumeration_keeps() -> None:
    # Constraints that read parameters by index, by get() with a default, by `in`, through a derived value that
    # needs the last parameter, and whole-mapping reads: each decided only once what it reads is set.
    space = Space(
        params={"A": [1, 2, 4], "B": [8, 16, 32], "C": [1, 2, 3]},
        constraints=[
            Constraint(lambda c: c["A"] == 1 or c.get("C", 0) < 3, "get with a default"),
            Constraint(lambda c: ("B" in c and c["B"] != 32) or c["A"] == 4, "membership"),
            Constraint(lambda c: c["ABC"] % 3 != 0 or c["A"] == 2, "derived"),
            Constraint(lambda c: len([k for k in c if k in ("A", "B", "C")]) == 3, "whole mapping"),
            Constraint(_guarded, "own handler"),
        ],
        derived={"ABC": lambda m: m["A"] * m["B"] * m["C"]},
    )
    shape = Shape.of({"N": 8})
    valid, rejected = space.valid_configs(shape, TARGET)
    assert valid == [c for c in space.all_configs() if space.check(c, shape, TARGET) is None]
    assert len(valid) and sum(rejected.values()) + len(valid) == space.size


def test_space_default_and_points() -> None:
    space = Space(points=[{"X": 1}, {"X": 2}])
    assert space.size == 2 and space.default_config() == Config.of({"X": 1})
    assert Space(params={"X": [3, 4]}, default={"X": 4}).default_config() == Config.of({"X": 4})


@pytest.mark.parametrize("kwargs", [{"params": {}}, {"points": []}, {"params": {"X": []}}])
def test_empty_spaces_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(SpecError):
        Space(**kwargs)  # type: ignore[arg-type]


def test_measurement_summary_from_raw_samples() -> None:
    samples = tuple(float(x) for x in [5, 1, 2, 3, 4, 100, 3, 3, 2, 4])
    m = Measurement(samples, Conditions(timer="test"))
    assert m.samples_ms == samples  # raw samples kept in order
    assert m.median_ms == 3.0 and m.min_ms == 1.0 and m.max_ms == 100.0
    summary = m.summary()
    assert summary["n"] == 10 and summary["ci_low_ms"] <= 3.0 <= summary["ci_high_ms"]


def test_median_ci_narrows_with_more_samples() -> None:
    small = sorted(float(i % 10) for i in range(20))
    large = sorted(float(i % 10) for i in range(2000))
    lo_s, hi_s = median_ci(small)
    lo_l, hi_l = median_ci(large)
    assert hi_l - lo_l <= hi_s - lo_s
    assert lo_l <= 4.5 <= hi_l


def test_target_round_trip() -> None:
    t = Target("triton", "nvidia", "sm_90", "NVIDIA H200", 132, (("triton", "3.6.0"),), True)
    assert Target.from_dict(t.as_dict()) == t


def test_check_with_the_target_unknown_judges_only_what_does_not_read_it() -> None:
    space = Space(
        params={"TMA": [0, 1], "X": [1, 2]},
        constraints=[
            Constraint(lambda c, s, t: not c["TMA"] or (t is not None and t.arch == TARGET.arch), "TMA needs the arch"),
            Constraint(lambda c: c["X"] == 1, "X is 1"),
        ],
    )
    shape, tma = Shape.of({"N": 8}), Config.of({"TMA": 1, "X": 1})
    assert space.check(tma, shape, None) == "TMA needs the arch"  # None: a target without the feature
    assert space.check(tma, shape, None, target_unknown=True) is None  # not judged until a worker names it
    assert space.check(tma, shape, TARGET) is None
    assert space.check(Config.of({"TMA": 1, "X": 2}), shape, None, target_unknown=True) == "X is 1"


def test_a_cpu_device_is_known_by_more_than_its_vendor_string() -> None:
    from kerntune.tune.pool import compile_counts

    pocl = Target("opencl", "AuthenticAMD", "cpu-pocl", "pthread-AMD EPYC", 2)
    lavapipe = Target("vulkan", "0x10005", "vulkan:0x0000", "llvmpipe (LLVM 15.0.6, 256 bits)", 1)
    h200 = Target("triton", "nvidia", "sm_90", "NVIDIA H200", 132)
    assert pocl.on_host_cpu and lavapipe.on_host_cpu and not h200.on_host_cpu
    assert compile_counts([object()], -1, pocl) == [0]  # no compilers taking the cores being timed
    assert compile_counts([object()], -1, h200)[0] >= 1 and compile_counts([object()], 2, pocl) == [2]
