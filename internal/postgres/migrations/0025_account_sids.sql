-- Windows accounts joined by their security identifiers: the first User
-- node value (DOMAIN\user) an org's events named a SID with is its
-- account; any other name an event gave the same SID is an alias of that
-- account, and names its node from then on (node.go, UpsertNodes).
CREATE TABLE account_sids (
    org_id  TEXT COLLATE "C" NOT NULL,
    sid     TEXT COLLATE "C" NOT NULL,
    account TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (org_id, sid)
);

CREATE TABLE account_aliases (
    org_id  TEXT COLLATE "C" NOT NULL,
    name    TEXT COLLATE "C" NOT NULL,
    account TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (org_id, name)
);
