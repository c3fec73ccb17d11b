-- Vigil schema, SQLite. Times are INTEGER nanoseconds since the Unix epoch (UTC).

CREATE TABLE artifacts (
    rowid      INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    org_id     TEXT NOT NULL,
    source     TEXT NOT NULL,
    raw        TEXT NOT NULL,
    ts         INTEGER NOT NULL,
    metadata   TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL,
    event      TEXT,
    enrichment TEXT
);
CREATE INDEX artifacts_org_ts ON artifacts (org_id, ts DESC, id DESC);
CREATE INDEX artifacts_org_source_ts ON artifacts (org_id, source, ts DESC, id DESC);

-- Full-text index over raw. External content: the text lives once, in artifacts.
CREATE VIRTUAL TABLE artifacts_fts USING fts5(
    raw,
    content = 'artifacts',
    content_rowid = 'rowid',
    tokenize = 'unicode61'
);

CREATE TABLE nodes (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL,
    type       TEXT NOT NULL,
    value      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (org_id, type, value)
);

CREATE TABLE incidents (
    id                 TEXT PRIMARY KEY,
    org_id             TEXT NOT NULL,
    title              TEXT NOT NULL,
    severity           TEXT NOT NULL,
    computed_severity  TEXT NOT NULL,
    status             INTEGER NOT NULL DEFAULT 1,
    classification     TEXT,
    classified_by_id   TEXT,
    classified_by_name TEXT,
    artifact_count     INTEGER NOT NULL DEFAULT 0,
    node_count         INTEGER NOT NULL DEFAULT 0,
    merged_into        TEXT,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    last_activity_at   INTEGER NOT NULL,
    resolved_at        INTEGER
);
CREATE INDEX incidents_org_created ON incidents (org_id, created_at DESC, id DESC);
CREATE INDEX incidents_org_open ON incidents (org_id, status, last_activity_at);

CREATE TABLE observations (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    type        TEXT NOT NULL,
    description TEXT NOT NULL,
    severity    TEXT NOT NULL,
    incident_id TEXT REFERENCES incidents (id),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX observations_org_created ON observations (org_id, created_at DESC, id DESC);
CREATE INDEX observations_incident ON observations (incident_id);

CREATE TABLE observation_nodes (
    observation_id TEXT NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    node_id        TEXT NOT NULL REFERENCES nodes (id),
    pos            INTEGER NOT NULL,
    key            INTEGER NOT NULL,
    PRIMARY KEY (observation_id, node_id)
) WITHOUT ROWID;

CREATE TABLE observation_artifacts (
    observation_id TEXT NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    artifact_id    TEXT NOT NULL,
    pos            INTEGER NOT NULL,
    PRIMARY KEY (observation_id, artifact_id)
) WITHOUT ROWID;

CREATE TABLE incident_nodes (
    incident_id TEXT NOT NULL REFERENCES incidents (id),
    node_id     TEXT NOT NULL REFERENCES nodes (id),
    key         INTEGER NOT NULL,
    PRIMARY KEY (incident_id, node_id)
) WITHOUT ROWID;
CREATE INDEX incident_nodes_node ON incident_nodes (node_id, key);

CREATE TABLE incident_artifacts (
    incident_id TEXT NOT NULL REFERENCES incidents (id),
    artifact_id TEXT NOT NULL,
    PRIMARY KEY (incident_id, artifact_id)
) WITHOUT ROWID;

CREATE TABLE incident_history (
    incident_id TEXT NOT NULL REFERENCES incidents (id),
    seq         INTEGER NOT NULL,
    actor       TEXT NOT NULL,
    at          INTEGER NOT NULL,
    from_status INTEGER NOT NULL,
    to_status   INTEGER NOT NULL,
    PRIMARY KEY (incident_id, seq)
) WITHOUT ROWID;

CREATE TABLE rules (
    id                    TEXT PRIMARY KEY,
    org_id                TEXT NOT NULL,
    name                  TEXT NOT NULL,
    priority              INTEGER NOT NULL,
    enabled               INTEGER NOT NULL,
    severity              TEXT NOT NULL,
    target_infrastructure INTEGER NOT NULL,
    conditions            TEXT NOT NULL,
    created_at            INTEGER NOT NULL,
    updated_at            INTEGER NOT NULL
);
CREATE INDEX rules_org_priority ON rules (org_id, priority, created_at, id);

CREATE TABLE roles (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    name        TEXT NOT NULL,
    permissions TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (org_id, name)
);

CREATE TABLE enrichment_settings (
    org_id     TEXT PRIMARY KEY,
    settings   TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
