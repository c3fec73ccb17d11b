-- The full-text indexes in parts of consecutive rowids (ftsparts.go):
-- part 0 is artifacts_fts, artifacts_addr and artifacts_vocab_instances
-- as before, holding every rowid below the first part listed here; part
-- n > 0 is artifacts_fts_n, artifacts_addr_n and
-- artifacts_vocab_instances_n, holding the rowids from its first_rowid to
-- the next part's.
CREATE TABLE fts_parts (
    part        INTEGER PRIMARY KEY,
    first_rowid INTEGER NOT NULL UNIQUE
);
