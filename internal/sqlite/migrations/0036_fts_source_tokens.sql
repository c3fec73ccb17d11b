-- Each token of the full-text index begins with the id of its artifact's
-- org and source (source.go: the id in base 36, then "_"), so that a word
-- has postings per source: "udp" within the firewall reads its matches
-- there only, where it intersected the postings of "udp" in every source
-- with those of a word on every firewall line (364 ms of CPU at 10 M
-- artifacts, docs/benchmarks.md), and no query reads another org's
-- postings. The ids of the pairs; one is never reused.
CREATE TABLE fts_sources (
    id     INTEGER PRIMARY KEY,
    org_id TEXT NOT NULL,
    source TEXT NOT NULL,
    UNIQUE (org_id, source)
);
INSERT INTO fts_sources (org_id, source) SELECT DISTINCT org_id, source FROM artifact_counts ORDER BY org_id, source;
-- The index anew: the lines are split into tokens in Go (as queries are),
-- and its tokenizer keeps "_" inside a token, the prefix's end. 0034's
-- source words go with the old index. The views of its words likewise.
DROP TABLE artifacts_vocab_instances;
DROP TABLE artifacts_vocab;
DROP TABLE artifacts_fts;
CREATE VIRTUAL TABLE artifacts_fts USING fts5(
    raw,
    content = 'artifacts',
    content_rowid = 'rowid',
    tokenize = "unicode61 remove_diacritics 0 categories 'L* Nd' tokenchars '_'",
    columnsize = 0
);
INSERT INTO artifacts_fts (artifacts_fts, rank) VALUES ('automerge', 16);
INSERT INTO artifacts_fts (artifacts_fts, rank) VALUES ('crisismerge', 64);
CREATE VIRTUAL TABLE artifacts_vocab USING fts5vocab(artifacts_fts, row);
CREATE VIRTUAL TABLE artifacts_vocab_instances USING fts5vocab(artifacts_fts, instance);
-- Open writes every stored artifact's entry in transactions of rowids
-- (reindex.go): the rowids from next_rowid to last_rowid are still to do,
-- and the row is deleted when they are done. A store closed halfway goes
-- on at its next Open; no search runs until it is done (Open returns
-- after it).
CREATE TABLE fts_reindex (next_rowid INTEGER NOT NULL, last_rowid INTEGER NOT NULL);
INSERT INTO fts_reindex (next_rowid, last_rowid) SELECT MIN(rowid), MAX(rowid) FROM artifacts HAVING COUNT(*) > 0;
