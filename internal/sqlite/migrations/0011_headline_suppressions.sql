-- An incident is named and rated after its observation of the highest
-- rank (severity, then specificity; the newest on ties): each observation
-- keeps the title it gives its incident and its rank. Observations
-- recorded before have no title (their incident keeps its own) and rank
-- by severity alone.
ALTER TABLE observations ADD COLUMN title TEXT NOT NULL DEFAULT '';
ALTER TABLE observations ADD COLUMN specificity INTEGER NOT NULL DEFAULT 0;
ALTER TABLE observations ADD COLUMN title_rank INTEGER NOT NULL DEFAULT 0;
UPDATE observations SET title_rank = 1000 * CASE severity
    WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 ELSE 0 END;
-- The headline of an incident is its first row here; the index also
-- serves every look-up of an incident's observations.
DROP INDEX observations_incident;
CREATE INDEX observations_incident_rank ON observations (incident_id, title_rank DESC, created_at DESC, id DESC);

-- Suppressions: an org's exceptions to detection.
CREATE TABLE suppressions (
    id                 TEXT PRIMARY KEY,
    org_id             TEXT NOT NULL,
    name               TEXT NOT NULL,
    enabled            INTEGER NOT NULL,
    reason             TEXT NOT NULL,
    conditions         TEXT NOT NULL,
    expires_at         INTEGER,
    suppressed_count   INTEGER NOT NULL DEFAULT 0,
    last_suppressed_at INTEGER,
    created_by         TEXT NOT NULL,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
);
CREATE INDEX suppressions_org_created ON suppressions (org_id, created_at DESC, id DESC);

-- What each suppression swallowed, once per (detector, key, artifact), so
-- that a redelivered artifact counts once; pruned with detection signals.
CREATE TABLE suppressed_signals (
    org_id         TEXT NOT NULL,
    suppression_id TEXT NOT NULL,
    detector       TEXT NOT NULL,
    key            TEXT NOT NULL,
    artifact_id    TEXT NOT NULL,
    at             INTEGER NOT NULL,
    PRIMARY KEY (org_id, suppression_id, detector, key, artifact_id)
) WITHOUT ROWID;
CREATE INDEX suppressed_signals_at ON suppressed_signals (at);
