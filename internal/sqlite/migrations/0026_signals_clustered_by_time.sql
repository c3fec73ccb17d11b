-- Signals are stored in the order the window queries read them: by (org,
-- detector, key, at), the artifact last. A redelivered artifact's signal
-- has the same time (the artifact's own), so the key still records it
-- once. The covering index detect_signals_window repeated (key, at,
-- member, weight) of every row in a second B-tree: every new key wrote
-- two pages far apart (the table's and the index's) into the WAL, which
-- was most of what a key spilled from the in-memory tally cost the writer
-- (docs/benchmarks.md, issue 18 target 0).
CREATE TABLE detect_signals_by_time (
    org_id      TEXT NOT NULL,
    detector    TEXT NOT NULL,
    key         TEXT NOT NULL,
    at          INTEGER NOT NULL,
    artifact_id TEXT NOT NULL,
    member      TEXT NOT NULL DEFAULT '',
    weight      INTEGER NOT NULL DEFAULT 1,
    unit        TEXT,
    nodes       TEXT,
    PRIMARY KEY (org_id, detector, key, at, artifact_id)
) WITHOUT ROWID;
INSERT OR IGNORE INTO detect_signals_by_time (org_id, detector, key, at, artifact_id, member, weight, unit, nodes)
    SELECT org_id, detector, key, at, artifact_id, member, weight, unit, nodes FROM detect_signals;
DROP TABLE detect_signals;
ALTER TABLE detect_signals_by_time RENAME TO detect_signals;
CREATE INDEX detect_signals_at ON detect_signals (at);
CREATE INDEX detect_signals_unit ON detect_signals (org_id, detector, key, unit) WHERE unit IS NOT NULL;
