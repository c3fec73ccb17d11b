-- Split raw text exactly as search.Tokens does (letters and decimal
-- digits, no accent folding), so that SQLite and PostgreSQL match the same
-- artifacts for the same query.
DROP TABLE artifacts_fts;
CREATE VIRTUAL TABLE artifacts_fts USING fts5(
    raw,
    content = 'artifacts',
    content_rowid = 'rowid',
    tokenize = "unicode61 remove_diacritics 0 categories 'L* Nd'"
);
INSERT INTO artifacts_fts (artifacts_fts) VALUES ('rebuild');
