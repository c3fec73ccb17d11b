-- The source is a token of the full-text index too, so that a query
-- filtered by source is counted from the index alone.
ALTER TABLE artifacts ADD COLUMN source_token TEXT GENERATED ALWAYS AS ('s' || lower(hex(source))) VIRTUAL;
DROP TABLE artifacts_fts;
CREATE VIRTUAL TABLE artifacts_fts USING fts5(
    org_token,
    source_token,
    raw,
    content = 'artifacts',
    content_rowid = 'rowid',
    tokenize = "unicode61 remove_diacritics 0 categories 'L* Nd'",
    columnsize = 0
);
INSERT INTO artifacts_fts (artifacts_fts) VALUES ('rebuild');
