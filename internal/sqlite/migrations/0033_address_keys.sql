-- The address keys of each artifact (search.AddressKeys: every four
-- consecutive tokens of one to three digits, "10.0.0.53"), so that a query
-- of addresses reads one key's doclist instead of comparing the positions
-- of four of the commonest words in most lines (docs/benchmarks.md).
-- Contentless: the keys are computed from the line in Go, given on insert
-- and on delete (artifact.go), each key one token (the dots kept), and no
-- positions (a key is never part of a phrase). Only artifacts with a key
-- have a row.
CREATE VIRTUAL TABLE artifacts_addr USING fts5(
    keys,
    content = '',
    columnsize = 0,
    detail = none,
    tokenize = "ascii tokenchars '.'"
);
INSERT INTO artifacts_addr (artifacts_addr, rank) VALUES ('automerge', 16);
INSERT INTO artifacts_addr (artifacts_addr, rank) VALUES ('crisismerge', 64);
-- The artifacts stored before this migration are indexed by Open, in
-- batches of rowids (addresses.go): the rowids from next_rowid to
-- last_rowid are still to do, and the row is deleted when they are done.
-- Until then, address queries are answered by the phrase as before.
CREATE TABLE addr_backfill (next_rowid INTEGER NOT NULL, last_rowid INTEGER NOT NULL);
INSERT INTO addr_backfill (next_rowid, last_rowid) SELECT MIN(rowid), MAX(rowid) FROM artifacts HAVING COUNT(*) > 0;
