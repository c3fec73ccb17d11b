-- From here on the full-text index (artifacts_fts) and the address keys
-- (artifacts_addr) take an artifact's search text (parse.SearchText): a
-- Windows event's values without its member names, any other line as it
-- is. The artifacts stored before were indexed by their whole line, and
-- must be unindexed by it (an external-content index is told the text it
-- indexed): those whose rowid is below below_rowid (artifact.go,
-- searchText), so that one whose rowid is reused below it later is
-- indexed whole as well. No row: no artifact was stored before.
CREATE TABLE search_text_whole (below_rowid INTEGER NOT NULL);
INSERT INTO search_text_whole (below_rowid) SELECT MAX(rowid) + 1 FROM artifacts HAVING COUNT(*) > 0;
