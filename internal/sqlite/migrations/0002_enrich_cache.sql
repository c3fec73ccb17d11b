-- Enrichment look-ups shared by every worker: one row per (provider, key).
CREATE TABLE enrich_cache (
    provider   TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT,
    negative   INTEGER NOT NULL,
    fetched_at INTEGER NOT NULL,
    PRIMARY KEY (provider, key)
) WITHOUT ROWID;
