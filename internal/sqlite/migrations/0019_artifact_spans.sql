-- The rowids of each org's artifacts per 10 minutes of their timestamps
-- (bucket = ts / 600e9): a search bounds its full-text matches to the
-- rowids its time window can hold, so that a query over the last day of a
-- store of millions reads that day's matches only (docs/benchmarks.md,
-- "Cost as the store grows"). The bounds are a superset: retention may
-- delete part of a bucket and leave its bounds as they were.
CREATE TABLE artifact_spans (
    org_id    TEXT NOT NULL,
    bucket    INTEGER NOT NULL,
    min_rowid INTEGER NOT NULL,
    max_rowid INTEGER NOT NULL,
    PRIMARY KEY (org_id, bucket)
) WITHOUT ROWID;
INSERT INTO artifact_spans (org_id, bucket, min_rowid, max_rowid)
    SELECT org_id, ts / 600000000000, MIN(rowid), MAX(rowid) FROM artifacts GROUP BY org_id, ts / 600000000000;
