-- FTS5 merges a level's segments once `automerge` of them exist; every
-- entry is written again at each level, and a new level starts each time
-- the index holds automerge^level commits' segments. With 16 the third
-- level's merges began after 4,096 commits (about five million artifacts,
-- the fifth minute of the edge mix), so a run's first minutes merged each
-- entry twice and every later minute three times: the later minutes
-- were slower by what one more rewrite of the index costs
-- (docs/benchmarks.md, "FTS5's automerge"). With 32, the second level's
-- merges begin after 1,024 commits and the third after 32,768 (about 40
-- million artifacts): two rewrites an entry over that range instead of
-- three, for up to 31 segments a level for a query to open instead of 15.
INSERT INTO artifacts_fts (artifacts_fts, rank) VALUES ('automerge', 32);
INSERT INTO artifacts_addr (artifacts_addr, rank) VALUES ('automerge', 32);
