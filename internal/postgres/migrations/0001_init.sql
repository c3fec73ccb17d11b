-- Vigil schema, PostgreSQL.
--
-- Times are BIGINT nanoseconds since the Unix epoch (UTC), exactly as in
-- the SQLite store, so that every API result (timestamps sent by clients
-- with nanoseconds, range bounds, tie order) is the same on both engines.
-- vigil_time(ns) turns one into a timestamptz for people reading the
-- tables by hand.
--
-- Every text column uses the "C" collation: ordering and equality are by
-- bytes, as SQLite's BINARY, whatever locale the database was created with.

CREATE FUNCTION vigil_time(ns BIGINT) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT timestamptz '1970-01-01 00:00:00+00' + (ns / 1000) * interval '1 microsecond' $$;

-- Artifacts grow without bound, so they are partitioned by month of their
-- timestamp (ts): InsertArtifacts creates the partition of each month it
-- sees (artifacts_pYYYYMM), retention drops whole months
-- (DropArtifactsBefore), and the DEFAULT partition takes any row no monthly
-- partition covers (a month dropped by retention while a late artifact of
-- it was being stored, timestamps outside 1900..2200).
--
-- raw is BYTEA: it is kept byte for byte, including NUL bytes that a TEXT
-- column refuses. search is the tsvector built in Go from our own
-- tokenizer (search.TSVector), never by PostgreSQL's text parser.
CREATE TABLE artifacts (
    id         TEXT COLLATE "C" NOT NULL,
    org_id     TEXT COLLATE "C" NOT NULL,
    source     TEXT COLLATE "C" NOT NULL,
    raw        BYTEA NOT NULL,
    ts         BIGINT NOT NULL,
    metadata   JSON NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL,
    event      JSON,
    enrichment JSON,
    search     TSVECTOR NOT NULL
) PARTITION BY RANGE (ts);
CREATE TABLE artifacts_default PARTITION OF artifacts DEFAULT;
-- Unique so that it may include the partition key; it is the list order.
CREATE UNIQUE INDEX artifacts_org_ts ON artifacts (org_id, ts DESC, id DESC);
CREATE INDEX artifacts_org_source_ts ON artifacts (org_id, source, ts DESC, id DESC);
CREATE INDEX artifacts_search ON artifacts USING GIN (search);

-- InsertArtifacts is idempotent on id, but a unique index of a partitioned
-- table must include the partition key: UNIQUE (id, ts) would let the same
-- id in again with another timestamp, into another partition. So each id
-- is claimed here first (INSERT … ON CONFLICT DO NOTHING, in the same
-- transaction) and only the rows whose claim succeeded go to artifacts.
-- The table also finds an artifact by id alone (references from
-- observations, SetArtifactEvent) and gives its ts, so that the lookup in
-- artifacts prunes to one partition. Retention deletes the claims of the
-- months it drops (by ts).
CREATE TABLE artifact_ids (
    id     TEXT COLLATE "C" PRIMARY KEY,
    org_id TEXT COLLATE "C" NOT NULL,
    ts     BIGINT NOT NULL
);
CREATE INDEX artifact_ids_ts ON artifact_ids (ts);

CREATE TABLE nodes (
    id         TEXT COLLATE "C" PRIMARY KEY,
    org_id     TEXT COLLATE "C" NOT NULL,
    type       TEXT COLLATE "C" NOT NULL,
    value      TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (org_id, type, value)
);

CREATE TABLE incidents (
    id                 TEXT COLLATE "C" PRIMARY KEY,
    org_id             TEXT COLLATE "C" NOT NULL,
    title              TEXT COLLATE "C" NOT NULL,
    severity           TEXT COLLATE "C" NOT NULL,
    computed_severity  TEXT COLLATE "C" NOT NULL,
    status             INTEGER NOT NULL DEFAULT 1,
    classification     TEXT COLLATE "C",
    classified_by_id   TEXT COLLATE "C",
    classified_by_name TEXT COLLATE "C",
    artifact_count     INTEGER NOT NULL DEFAULT 0,
    node_count         INTEGER NOT NULL DEFAULT 0,
    merged_into        TEXT COLLATE "C",
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    last_activity_at   BIGINT NOT NULL,
    resolved_at        BIGINT
);
CREATE INDEX incidents_org_created ON incidents (org_id, created_at DESC, id DESC);
CREATE INDEX incidents_org_open ON incidents (org_id, status, last_activity_at);

CREATE TABLE observations (
    id          TEXT COLLATE "C" PRIMARY KEY,
    org_id      TEXT COLLATE "C" NOT NULL,
    type        TEXT COLLATE "C" NOT NULL,
    description TEXT COLLATE "C" NOT NULL,
    severity    TEXT COLLATE "C" NOT NULL,
    incident_id TEXT COLLATE "C" REFERENCES incidents (id),
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX observations_org_created ON observations (org_id, created_at DESC, id DESC);
CREATE INDEX observations_incident ON observations (incident_id);

CREATE TABLE observation_nodes (
    observation_id TEXT COLLATE "C" NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    node_id        TEXT COLLATE "C" NOT NULL REFERENCES nodes (id),
    pos            INTEGER NOT NULL,
    key            BOOLEAN NOT NULL,
    PRIMARY KEY (observation_id, node_id)
);

CREATE TABLE observation_artifacts (
    observation_id TEXT COLLATE "C" NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    artifact_id    TEXT COLLATE "C" NOT NULL,
    pos            INTEGER NOT NULL,
    PRIMARY KEY (observation_id, artifact_id)
);

CREATE TABLE incident_nodes (
    incident_id TEXT COLLATE "C" NOT NULL REFERENCES incidents (id),
    node_id     TEXT COLLATE "C" NOT NULL REFERENCES nodes (id),
    key         BOOLEAN NOT NULL,
    PRIMARY KEY (incident_id, node_id)
);
CREATE INDEX incident_nodes_node ON incident_nodes (node_id, key);

CREATE TABLE incident_artifacts (
    incident_id TEXT COLLATE "C" NOT NULL REFERENCES incidents (id),
    artifact_id TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (incident_id, artifact_id)
);

CREATE TABLE incident_history (
    incident_id TEXT COLLATE "C" NOT NULL REFERENCES incidents (id),
    seq         INTEGER NOT NULL,
    actor       TEXT COLLATE "C" NOT NULL,
    at          BIGINT NOT NULL,
    from_status INTEGER NOT NULL,
    to_status   INTEGER NOT NULL,
    PRIMARY KEY (incident_id, seq)
);

CREATE TABLE rules (
    id                    TEXT COLLATE "C" PRIMARY KEY,
    org_id                TEXT COLLATE "C" NOT NULL,
    name                  TEXT COLLATE "C" NOT NULL,
    priority              INTEGER NOT NULL,
    enabled               BOOLEAN NOT NULL,
    severity              TEXT COLLATE "C" NOT NULL,
    target_infrastructure BOOLEAN NOT NULL,
    conditions            JSON NOT NULL,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL
);
CREATE INDEX rules_org_priority ON rules (org_id, priority, created_at, id);

CREATE TABLE roles (
    id          TEXT COLLATE "C" PRIMARY KEY,
    org_id      TEXT COLLATE "C" NOT NULL,
    name        TEXT COLLATE "C" NOT NULL,
    permissions TEXT[] COLLATE "C" NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    UNIQUE (org_id, name)
);

CREATE TABLE enrichment_settings (
    org_id     TEXT COLLATE "C" PRIMARY KEY,
    settings   JSON NOT NULL,
    updated_at BIGINT NOT NULL
);
