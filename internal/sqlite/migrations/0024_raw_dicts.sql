-- zstd dictionaries of raw lines, one per org and source (a newer one
-- replaces an older for new lines; the older stays for the lines it
-- compressed). artifacts.raw stays TEXT for lines stored before their
-- source had a dictionary, and is a BLOB (a zstd frame naming its
-- dictionary by id) for the others: see rawzstd.go. The full-text index
-- keeps external content, but is given the plain text on insert and
-- delete; FTS5 'rebuild' would read the compressed bytes and must not be
-- used on artifacts_fts from here on.
CREATE TABLE raw_dicts (
    id         INTEGER PRIMARY KEY,
    org_id     TEXT NOT NULL,
    source     TEXT NOT NULL,
    dict       BLOB NOT NULL,
    created_at INTEGER NOT NULL
);
