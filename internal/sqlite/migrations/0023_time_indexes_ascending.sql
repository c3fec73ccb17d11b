-- The two time indexes in ascending time: new artifacts (the newest
-- timestamps) are then added at the end of their org's (and source's)
-- range, which SQLite fills page after page, instead of at its start,
-- where every full page is split in two and stays half empty. Built
-- incrementally over 1 M artifacts, (org_id, ts DESC) took 46 bytes per
-- artifact and (org_id, source, ts DESC) 59; rebuilt at once, 23 and 30
-- (docs/benchmarks.md, "Disk per artifact"). Searches walk them backwards
-- for the newest first, with the same plans.
DROP INDEX artifacts_org_ts;
DROP INDEX artifacts_org_source_ts;
CREATE INDEX artifacts_org_ts ON artifacts (org_id, ts);
CREATE INDEX artifacts_org_source_ts ON artifacts (org_id, source, ts);
