-- The two time indexes no longer carry the artifact's id (36 characters
-- of text in every entry): at 1 M artifacts they took 257 bytes per
-- artifact, 53 without it (docs/benchmarks.md, "Disk per artifact").
-- Searches order by (ts DESC, id DESC) as before: SQLite walks the index
-- by time and sorts only the artifacts of one timestamp by id ("USE TEMP
-- B-TREE FOR RIGHT PART OF ORDER BY"), reading their rows, which the page
-- reads anyway. The space the old entries took is reused as the store
-- grows (or returned by VACUUM).
DROP INDEX artifacts_org_ts;
DROP INDEX artifacts_org_source_ts;
CREATE INDEX artifacts_org_ts ON artifacts (org_id, ts DESC);
CREATE INDEX artifacts_org_source_ts ON artifacts (org_id, source, ts DESC);
