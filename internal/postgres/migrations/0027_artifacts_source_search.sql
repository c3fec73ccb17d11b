-- The source inside the full-text index: one GIN index of (source,
-- search) instead of search alone, its source column by btree_gin (a
-- contrib extension shipped with PostgreSQL, trusted since 13: a database
-- owner may create it). GIN keeps a posting list per key of each column,
-- and one scan of it steps through them together, skipping ahead in one
-- to the next item of another: "udp" within the firewall reads the
-- postings of "udp" and of the source "firewall" where they meet, and
-- never the rows. Before, the bitmap of "udp" in every source was read
-- whole and each of its rows fetched to test its source (985 ms for
-- "udp" in the firewall at 10 M artifacts, 1.6 s within a day,
-- docs/benchmarks.md). A query without a source reads the search column
-- of the same index as it read the old one: a GIN index serves any subset
-- of its columns.
--
-- The org is left out: every row of a one-org deployment would be one
-- posting list, stepped through by every query.
--
-- The extension goes into a schema of its own, where no store's schema
-- holds it: vigil bench opens a store in a scratch schema of the same
-- database and drops it (CASCADE) after, which would drop an extension
-- created there and every index using it. An extension installed before
-- (in any schema) is used as it is: the index finds its operator class
-- wherever it is.
--
-- Built here for every partition before the old index goes, holding off
-- writes while it is built (docs/operations.md: minutes at 10 M
-- artifacts); more memory than the default makes the build faster.
CREATE SCHEMA IF NOT EXISTS vigil_extensions;
CREATE EXTENSION IF NOT EXISTS btree_gin SCHEMA vigil_extensions;
SELECT set_config('maintenance_work_mem', '256MB', true)
    WHERE pg_size_bytes(current_setting('maintenance_work_mem')) < pg_size_bytes('256MB');
-- IF NOT EXISTS: an index built beforehand (or by this migration under
-- another number) is kept as it is.
CREATE INDEX IF NOT EXISTS artifacts_source_search ON artifacts USING gin (source, search);
DROP INDEX IF EXISTS artifacts_search;
