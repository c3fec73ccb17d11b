-- How many artifacts each org holds per source and 10 minutes of their
-- timestamps (bucket = ts / 600e9, as artifact_spans): a list's total
-- (no query, or how many artifacts a source filter holds) is summed from
-- here instead of counted entry by entry in a time index, which took 1-2 s
-- at 11 M artifacts (docs/benchmarks.md, "Search that stays fast as the
-- store grows"). Kept exact: InsertArtifacts adds what it stored,
-- retention subtracts what it deleted. Built here from the source time
-- index, one pass over it (about 20 s at 10 M artifacts).
CREATE TABLE artifact_counts (
    org_id TEXT NOT NULL,
    source TEXT NOT NULL,
    bucket INTEGER NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (org_id, source, bucket)
) WITHOUT ROWID;
INSERT INTO artifact_counts (org_id, source, bucket, n)
    SELECT org_id, source, ts / 600000000000, COUNT(*) FROM artifacts INDEXED BY artifacts_org_source_ts
    GROUP BY org_id, source, ts / 600000000000;
