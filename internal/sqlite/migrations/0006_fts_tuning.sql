-- FTS5 keeps each document's token count (columnsize) only for bm25
-- ranking, which search does not use (results are newest first): not
-- keeping it saves a B-tree insert per artifact. And it merges a level's
-- segments once 16 of them exist (default 4), so that each index entry is
-- rewritten fewer times as the index grows: BenchmarkProcess without
-- detection went from 23.3k to 25.9k artifacts/s, and queries read a few
-- more segments at no measurable cost (docs/benchmarks.md).
DROP TABLE artifacts_fts;
CREATE VIRTUAL TABLE artifacts_fts USING fts5(
    raw,
    content = 'artifacts',
    content_rowid = 'rowid',
    tokenize = "unicode61 remove_diacritics 0 categories 'L* Nd'",
    columnsize = 0
);
INSERT INTO artifacts_fts (artifacts_fts) VALUES ('rebuild');
INSERT INTO artifacts_fts (artifacts_fts, rank) VALUES ('automerge', 16);
