-- Each org's choices about the starter Sigma rules (internal/starterrules):
-- a row where the org turned one on or off; no row, the rule's default.
CREATE TABLE starter_rule_states (
    org_id     TEXT COLLATE "C" NOT NULL,
    rule_id    TEXT COLLATE "C" NOT NULL,
    enabled    BOOLEAN NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, rule_id)
);
