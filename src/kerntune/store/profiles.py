"""Hardware-counter profiles attached to candidates (``kerntune profile``): one row per profiled launch."""

from __future__ import annotations

import json
import time

from kerntune.store.jsontext import reading_json
from kerntune.store.sqlite import Store


def save_profile(store: Store, candidate_id: int, tool: str, data: dict[str, object]) -> None:
    with store._transaction() as db:
        db.execute(
            "INSERT INTO profiles (candidate_id, tool, created, data) VALUES (?,?,?,?)",
            (candidate_id, tool, time.time(), reading_json(data)),
        )


def latest_profiles(store: Store, candidate_ids: list[int]) -> dict[int, dict[str, object]]:
    """The newest profile of each candidate that has one, by candidate id."""
    found: dict[int, dict[str, object]] = {}
    for cid in candidate_ids:
        row = store.db.execute(
            "SELECT tool, data FROM profiles WHERE candidate_id=? ORDER BY id DESC LIMIT 1", (cid,)
        ).fetchone()
        if row:
            found[cid] = {"tool": row[0], **json.loads(row[1])}
    return found
