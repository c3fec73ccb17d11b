-- Artifacts kept in a VictoriaLogs cluster (internal/vlogs,
-- docs/architecture.md "Artifacts in VictoriaLogs"). PostgreSQL keeps what
-- VictoriaLogs, which only appends, cannot: each org's tenant, each
-- artifact id's claim (artifact_ids, as before, so that correlation and
-- incidents keep naming artifacts by id), the write in progress of a claim,
-- enrichment found after the artifact was stored, and the rare raw line
-- too long for one VictoriaLogs entry. In a deployment that keeps
-- artifacts in PostgreSQL these tables stay empty and the new columns
-- NULL.

-- The tenant of each org: one AccountID per deployment (random, so that
-- two deployments sharing a cluster never share a tenant), one ProjectID
-- per org. Every request to VictoriaLogs names the tenant read from here.
CREATE TABLE artifact_account (
    singleton  INTEGER PRIMARY KEY CHECK (singleton = 1),
    account_id BIGINT NOT NULL CHECK (account_id BETWEEN 1 AND 4294967295)
);
CREATE SEQUENCE artifact_projects MINVALUE 1 MAXVALUE 4294967295;
CREATE TABLE artifact_tenants (
    org_id     TEXT COLLATE "C" PRIMARY KEY,
    project_id BIGINT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

-- A claim being written: writer is the token of the InsertArtifacts call
-- that holds it until lease_until (nanoseconds, the database's clock).
-- NULL once the artifact is on disk in VictoriaLogs. A claim whose lease
-- expired may have been written before its writer died: whoever takes it
-- over looks it up in VictoriaLogs before writing it.
-- Releasing a claim updates its row: room left in each page keeps that
-- update in the page (HOT, no index entries written).
ALTER TABLE artifact_ids ADD COLUMN writer BIGINT, ADD COLUMN lease_until BIGINT;
ALTER TABLE artifact_ids SET (fillfactor = 70);

-- Enrichment recorded after the artifact was stored (SetArtifactEnrichment):
-- it replaces the artifact's own when read.
CREATE TABLE artifact_enrichment (
    org_id     TEXT COLLATE "C" NOT NULL,
    id         TEXT COLLATE "C" NOT NULL,
    enrichment TEXT,
    PRIMARY KEY (org_id, id)
);

-- Raw lines too long to fit one VictoriaLogs entry (2 MiB with their
-- search text); the entry holds the rest and says the raw is here.
CREATE TABLE artifact_raws (
    org_id TEXT COLLATE "C" NOT NULL,
    id     TEXT COLLATE "C" NOT NULL,
    ts     BIGINT NOT NULL,
    raw    BYTEA NOT NULL,
    PRIMARY KEY (org_id, id)
);
CREATE INDEX artifact_raws_ts ON artifact_raws (ts);
