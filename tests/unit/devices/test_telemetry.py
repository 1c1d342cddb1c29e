"""Telemetry summaries and reason decoding (pure logic; real NVML readings are checked in tests/gpu)."""

from __future__ import annotations

from typing import Any

from kerntune.devices.telemetry import Recorder, Unavailable, decode_reasons, open_telemetry


class FixedReadings:
    """A null telemetry source replaying given readings (named as such: it never stands for a device)."""

    available = True

    def __init__(self, readings: list[dict[str, Any]]) -> None:
        self.readings = iter(readings)

    def read(self) -> dict[str, Any]:
        return next(self.readings)


def test_reason_bits_decode_and_only_real_throttling_flags() -> None:
    assert decode_reasons(0x1 | 0x4) == ["gpu_idle", "sw_power_cap"]
    assert decode_reasons(0x1000) == ["0x1000"]
    idle = Recorder(
        FixedReadings([{"sm_mhz": 1980, "mem_mhz": 3201, "power_w": 90.0, "temp_c": 35, "reasons": ["gpu_idle"]}])
    )
    idle.take()
    assert idle.summary()["throttled"] is False
    capped = Recorder(
        FixedReadings(
            [
                {"sm_mhz": 1980, "mem_mhz": 3201, "power_w": 500.0, "temp_c": 40, "reasons": []},
                {"sm_mhz": 1700, "mem_mhz": 3201, "power_w": 690.0, "temp_c": 52, "reasons": ["sw_power_cap"]},
                {"available": False, "reason": "read failed"},
            ]
        )
    )
    for _ in range(3):
        capped.take()
    summary = capped.summary({"clock_ramp_ms": 0.0})
    assert summary["throttled"] is True and summary["readings"] == 2
    assert (summary["sm_mhz_min"], summary["sm_mhz_max"], summary["power_w_max"]) == (1700, 1980, 690.0)
    assert summary["clock_ramp_ms"] == 0.0


def test_no_telemetry_says_so() -> None:
    assert Recorder(Unavailable("no telemetry for the host CPU")).summary() == {
        "available": False,
        "reason": "no telemetry for the host CPU",
    }
    assert not open_telemetry("cpu").available


def test_a_second_compute_process_on_the_device_is_another_tenant() -> None:
    from kerntune.model import Conditions

    base = {"sm_mhz": 1980, "mem_mhz": 3201, "power_w": 300.0, "temp_c": 40, "reasons": []}
    alone = Recorder(FixedReadings([{**base, "compute_processes": 1}, {**base, "compute_processes": 1}]))
    shared = Recorder(FixedReadings([{**base, "compute_processes": 1}, {**base, "compute_processes": 2}]))
    unknown = Recorder(FixedReadings([base]))  # NVML would not list processes: nothing is claimed either way
    for recorder, reads in ((alone, 2), (shared, 2), (unknown, 1)):
        for _ in range(reads):
            recorder.take()
    assert alone.summary()["other_tenant"] is False and alone.summary()["compute_processes_max"] == 1
    assert shared.summary()["other_tenant"] is True  # one reading with a second process flags the measurement
    assert "other_tenant" not in unknown.summary()
    assert Conditions("cuda_events", telemetry=shared.summary()).other_tenant
    assert not Conditions("cuda_events", telemetry=alone.summary()).other_tenant


def test_the_commands_own_processes_with_a_context_are_not_tenants() -> None:
    # A tune's compile workers hold contexts too: three on the device, three of them ours, is no tenant; a fourth
    # beyond our three is.
    base = {"sm_mhz": 1980, "mem_mhz": 3201, "power_w": 300.0, "temp_c": 40, "reasons": []}
    ours = Recorder(FixedReadings([{**base, "compute_processes": 3, "own_processes": 3}]))
    fourth = Recorder(FixedReadings([{**base, "compute_processes": 4, "own_processes": 3}]))
    for recorder in (ours, fourth):
        recorder.take()
    assert ours.summary()["other_tenant"] is False and ours.summary()["own_processes_max"] == 3
    assert fourth.summary()["other_tenant"] is True
