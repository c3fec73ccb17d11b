-- Each token of the full-text index begins with the id of its artifact's
-- org and source (source.go: the id in base 36, then the letter ꙮ), so
-- that a word has postings per source: "udp" within the firewall reads
-- its matches there only, where it intersected the postings of "udp" in
-- every source with those of a word on every firewall line (364 ms of CPU
-- at 10 M artifacts, docs/benchmarks.md), and no query reads another
-- org's postings. The ids of the pairs; one is never reused.
CREATE TABLE fts_sources (
    id     INTEGER PRIMARY KEY,
    org_id TEXT NOT NULL,
    source TEXT NOT NULL,
    UNIQUE (org_id, source)
);
INSERT INTO fts_sources (org_id, source) SELECT DISTINCT org_id, source FROM artifact_counts ORDER BY org_id, source;
-- Every stored artifact is indexed anew: the index is emptied here, and
-- Open writes the entries again in transactions of rowids (reindex.go),
-- the rowids from next_rowid to last_rowid still to do; the row is
-- deleted when they are done. A store closed halfway goes on at its next
-- Open; no search runs until it is done (Open returns after it).
INSERT INTO artifacts_fts (artifacts_fts) VALUES ('delete-all');
CREATE TABLE fts_reindex (next_rowid INTEGER NOT NULL, last_rowid INTEGER NOT NULL);
INSERT INTO fts_reindex (next_rowid, last_rowid) SELECT MIN(rowid), MAX(rowid) FROM artifacts HAVING COUNT(*) > 0;
