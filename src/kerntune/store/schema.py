"""The store's SQLite tables, created when a store is opened (``CREATE ... IF NOT EXISTS``)."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created TEXT NOT NULL,
    problem TEXT NOT NULL,
    spec_path TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    target TEXT NOT NULL,
    strategy TEXT NOT NULL,
    budget TEXT NOT NULL,
    shapes TEXT NOT NULL,
    dtype TEXT NOT NULL,
    seed INTEGER NOT NULL,
    options TEXT NOT NULL,
    status TEXT NOT NULL,
    stop_reason TEXT NOT NULL DEFAULT '',
    elapsed_s REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS candidates (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    shape_key TEXT NOT NULL,
    shape TEXT NOT NULL,
    config_key TEXT NOT NULL,
    config TEXT NOT NULL,
    role TEXT NOT NULL,
    label TEXT NOT NULL,
    status TEXT NOT NULL,
    failure TEXT,
    reason TEXT NOT NULL DEFAULT '',
    compile_s REAL,
    binary_hash TEXT,
    resources TEXT NOT NULL DEFAULT '{}',
    started REAL NOT NULL,
    finished REAL,
    UNIQUE (run_id, shape_key, role, label, config_key)
);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    candidate_id INTEGER NOT NULL REFERENCES candidates(id),
    conditions TEXT NOT NULL,
    median_ms REAL NOT NULL,
    n INTEGER NOT NULL,
    created REAL NOT NULL,
    phase TEXT NOT NULL DEFAULT 'search',
    round INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS samples (
    measurement_id INTEGER NOT NULL REFERENCES measurements(id),
    seq INTEGER NOT NULL,
    ms REAL NOT NULL,
    PRIMARY KEY (measurement_id, seq)
);
CREATE TABLE IF NOT EXISTS verdicts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    candidate_id INTEGER NOT NULL REFERENCES candidates(id),
    kind TEXT NOT NULL,
    outcome TEXT NOT NULL,
    metric TEXT NOT NULL,
    value REAL,
    threshold REAL,
    reason TEXT NOT NULL,
    details TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS ab_runs (
    id TEXT PRIMARY KEY,
    created TEXT NOT NULL,
    kind TEXT NOT NULL,
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    target TEXT NOT NULL,
    conditions TEXT NOT NULL,
    scheme TEXT NOT NULL,
    ratio REAL,
    ci_low REAL,
    ci_high REAL,
    band REAL,
    verdict TEXT NOT NULL,
    expect TEXT,
    claim_failed INTEGER NOT NULL DEFAULT 0,
    reason TEXT NOT NULL DEFAULT '',
    hashes TEXT NOT NULL DEFAULT '{}',
    wall_s REAL
);
CREATE TABLE IF NOT EXISTS ab_processes (
    ab_id TEXT NOT NULL REFERENCES ab_runs(id),
    seq INTEGER NOT NULL,
    side TEXT NOT NULL,
    value REAL NOT NULL,
    samples TEXT NOT NULL,
    info TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (ab_id, seq)
);
CREATE TABLE IF NOT EXISTS pruned (
    run_id TEXT NOT NULL REFERENCES runs(id),
    shape_key TEXT NOT NULL,
    reason TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (run_id, shape_key, reason)
);
CREATE TABLE IF NOT EXISTS noise_bands (
    scope TEXT PRIMARY KEY,
    band REAL NOT NULL,
    ab_id TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS candidates_run ON candidates(run_id);
CREATE TABLE IF NOT EXISTS calibrations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    device_key TEXT NOT NULL,
    created REAL NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS profiles (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    candidate_id INTEGER NOT NULL REFERENCES candidates(id),
    tool TEXT NOT NULL,
    created REAL NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS measurements_candidate ON measurements(candidate_id);
CREATE INDEX IF NOT EXISTS verdicts_candidate ON verdicts(candidate_id);
"""
