-- Search scoped to the org inside the full-text index: the org is one
-- more indexed column, a single token, so that a query's total is counted
-- from the index alone, without reading each matching row for its org.
ALTER TABLE artifacts ADD COLUMN org_token TEXT GENERATED ALWAYS AS ('o' || lower(hex(org_id))) VIRTUAL;
DROP TABLE artifacts_fts;
CREATE VIRTUAL TABLE artifacts_fts USING fts5(
    org_token,
    raw,
    content = 'artifacts',
    content_rowid = 'rowid',
    tokenize = "unicode61 remove_diacritics 0 categories 'L* Nd'",
    columnsize = 0
);
INSERT INTO artifacts_fts (artifacts_fts) VALUES ('rebuild');
