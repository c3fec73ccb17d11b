-- Back to one indexed column. The org and source tokens (0008, 0009)
-- made counting a query's matches an index-only operation, but a token
-- present in every row is the costliest thing a full-text index can hold:
-- every flush and merge rewrites its doclist. They cost 16–23 % of ingest
-- (docs/benchmarks.md). Search now counts from the index alone when the
-- org is the only one in the store, and otherwise walks the smaller of
-- the org's time index and the matches.
DROP TABLE artifacts_fts;
ALTER TABLE artifacts DROP COLUMN source_token;
ALTER TABLE artifacts DROP COLUMN org_token;
CREATE VIRTUAL TABLE artifacts_fts USING fts5(
    raw,
    content = 'artifacts',
    content_rowid = 'rowid',
    tokenize = "unicode61 remove_diacritics 0 categories 'L* Nd'",
    columnsize = 0
);
INSERT INTO artifacts_fts (artifacts_fts) VALUES ('rebuild');
