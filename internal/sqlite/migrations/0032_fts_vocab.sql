-- The words of the full-text index, for a search to turn a prefix ("fail*")
-- into the words it stands for ("failed" OR "failure") once: FTS5 merges a
-- prefix's doclists anew, over the whole index, in every statement that
-- names it (1.4 s of CPU for "fail*" at 10 M artifacts, docs/benchmarks.md).
-- A view of the index: nothing is stored, nothing built.
CREATE VIRTUAL TABLE artifacts_vocab USING fts5vocab(artifacts_fts, row);
