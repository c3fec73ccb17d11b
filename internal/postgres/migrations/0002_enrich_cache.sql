-- Enrichment look-ups shared by every worker: one row per (provider, key).
CREATE TABLE enrich_cache (
    provider   TEXT COLLATE "C" NOT NULL,
    key        TEXT COLLATE "C" NOT NULL,
    value      JSON,
    negative   BOOLEAN NOT NULL,
    fetched_at BIGINT NOT NULL,
    PRIMARY KEY (provider, key)
);
