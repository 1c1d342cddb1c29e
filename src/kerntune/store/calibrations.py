"""Device calibrations in the store: one row per measurement, newest first; stale after a maximum age."""

from __future__ import annotations

import json
import time

from kerntune.model.roofline import CeilingsRecord
from kerntune.store.jsontext import record_json
from kerntune.store.sqlite import Store


def save_calibration(store: Store, device_key: str, data: CeilingsRecord) -> None:
    with store._transaction() as db:
        db.execute(
            "INSERT INTO calibrations (device_key, created, data) VALUES (?,?,?)",
            (device_key, float(data["created"]), record_json(data, "the calibration", "calibrate again")),
        )


def latest_calibration(store: Store, device_key: str, max_age_s: float) -> CeilingsRecord | None:
    """The newest calibration of this device if it is younger than ``max_age_s``."""
    row = store.db.execute(
        "SELECT data FROM calibrations WHERE device_key=? AND created>=? ORDER BY created DESC LIMIT 1",
        (device_key, time.time() - max_age_s),
    ).fetchone()
    found: CeilingsRecord | None = json.loads(row[0]) if row else None  # written by save_calibration
    return found
