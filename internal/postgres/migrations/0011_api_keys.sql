-- Ingest API keys: long-lived credentials of an org, stored as the
-- SHA-256 of their secret; a revoked key is kept (revoked_at set) so that
-- its listing says when it stopped working.
CREATE TABLE api_keys (
    id           TEXT COLLATE "C" PRIMARY KEY,
    org_id       TEXT COLLATE "C" NOT NULL,
    name         TEXT COLLATE "C" NOT NULL,
    permissions  TEXT[] NOT NULL,
    hash         BYTEA NOT NULL,
    created_by   TEXT COLLATE "C" NOT NULL,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at   BIGINT
);
CREATE INDEX api_keys_org_created ON api_keys (org_id, created_at DESC, id DESC);
