-- The full-text indexes in parts of consecutive rowids (ftsparts.go):
-- part 0 is artifacts_fts, artifacts_addr and artifacts_vocab_instances
-- as before; part n > 0 is artifacts_fts_n, artifacts_addr_n and
-- artifacts_vocab_instances_n. A part holds the rowids from its
-- first_rowid to the next part's. A dropped part's entries were all
-- deleted at once by retention, its artifacts being all expired; a merged
-- part no longer written to was merged into one segment (merge.go).
CREATE TABLE fts_parts (
    part        INTEGER PRIMARY KEY,
    first_rowid INTEGER NOT NULL UNIQUE,
    dropped     INTEGER NOT NULL DEFAULT 0,
    merged      INTEGER NOT NULL DEFAULT 0
);
INSERT INTO fts_parts (part, first_rowid) VALUES (0, -9223372036854775808);
