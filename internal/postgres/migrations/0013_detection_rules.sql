-- Detection rules: each org's Sigma rules, as posted, with what Vigil
-- read from them. A rule's Sigma id and name are unique in its org:
-- correlation rules name their base rules by either.
CREATE TABLE detection_rules (
    id         TEXT COLLATE "C" PRIMARY KEY,
    org_id     TEXT COLLATE "C" NOT NULL,
    title      TEXT NOT NULL,
    sigma_id   TEXT COLLATE "C" NOT NULL,
    name       TEXT COLLATE "C" NOT NULL,
    kind       TEXT COLLATE "C" NOT NULL,
    level      TEXT COLLATE "C" NOT NULL,
    enabled    BOOLEAN NOT NULL,
    rule       TEXT NOT NULL,
    created_by TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX detection_rules_org_created ON detection_rules (org_id, created_at, id);
CREATE UNIQUE INDEX detection_rules_sigma_id ON detection_rules (org_id, sigma_id) WHERE sigma_id <> '';
CREATE UNIQUE INDEX detection_rules_name ON detection_rules (org_id, name) WHERE name <> '';
