-- FTS5 keeps each document's token count (columnsize) only for bm25
-- ranking, which search does not use (results are newest first): not
-- keeping it saves a B-tree insert per artifact.
DROP TABLE artifacts_fts;
CREATE VIRTUAL TABLE artifacts_fts USING fts5(
    raw,
    content = 'artifacts',
    content_rowid = 'rowid',
    tokenize = "unicode61 remove_diacritics 0 categories 'L* Nd'",
    columnsize = 0
);
INSERT INTO artifacts_fts (artifacts_fts) VALUES ('rebuild');
