-- Windows accounts joined by their security identifiers: the first User
-- node value (DOMAIN\user) an org's events named a SID with is its
-- account; any other name an event gave the same SID is an alias of that
-- account, and names its node from then on (node.go, upsertNodes).
CREATE TABLE account_sids (
    org_id  TEXT NOT NULL,
    sid     TEXT NOT NULL,
    account TEXT NOT NULL,
    PRIMARY KEY (org_id, sid)
) WITHOUT ROWID;

CREATE TABLE account_aliases (
    org_id  TEXT NOT NULL,
    name    TEXT NOT NULL,
    account TEXT NOT NULL,
    PRIMARY KEY (org_id, name)
) WITHOUT ROWID;
