-- FTS5 merges a level's segments incrementally once 16 exist (automerge,
-- 0006), a little with every commit; but it also merges them all at once,
-- inside the commit that made the 16th (crisismerge, default 16), so the
-- incremental merge never ran and every few million artifacts one commit
-- rewrote a level of millions of entries (24-33 s stalls at 4 M and 8 M,
-- docs/benchmarks.md). A crisis now needs 64 segments on a level.
INSERT INTO artifacts_fts (artifacts_fts, rank) VALUES ('crisismerge', 64);
