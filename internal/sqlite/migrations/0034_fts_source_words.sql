-- Each artifact's org and source as one more word of its entry in the
-- full-text index (source.go: the letter ꙮ, then the hex of the org id,
-- "x", the hex of the source), so that a query within a source is one
-- full-text query, `(udp) AND ꙮ…`, read newest first and stopped early,
-- instead of every match of the term tested against the source's rows or
-- the source's time index walked against the term's matches (8 s of CPU
-- for "udp" in the firewall at 10 M artifacts, docs/benchmarks.md).
-- Only the one word per artifact is added, rowids ascending: no line is
-- read or tokenized again (artifacts_fts takes its text as given; its
-- content table is never read back).
INSERT INTO artifacts_fts (rowid, raw)
    SELECT rowid, 'ꙮ' || hex(org_id) || 'x' || hex(source) FROM artifacts ORDER BY rowid;
-- The words of the index one posting at a time (prefix.go): the words a
-- prefix stands for are found one seek each, where artifacts_vocab reads
-- every posting of every word it lists to count them (16 ms of CPU for
-- "fail*" at 1 M artifacts, ten times that at 10 M). A view of the index:
-- nothing is stored, nothing built.
CREATE VIRTUAL TABLE artifacts_vocab_instances USING fts5vocab(artifacts_fts, instance);
