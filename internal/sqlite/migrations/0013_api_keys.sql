-- Ingest API keys: long-lived credentials of an org, stored as the
-- SHA-256 of their secret; a revoked key is kept (revoked_at set) so that
-- its listing says when it stopped working.
CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    name         TEXT NOT NULL,
    permissions  TEXT NOT NULL,
    hash         BLOB NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER
);
CREATE INDEX api_keys_org_created ON api_keys (org_id, created_at DESC, id DESC);
