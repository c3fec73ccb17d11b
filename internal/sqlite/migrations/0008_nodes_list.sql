-- GET /v1/nodes lists an org's nodes newest first: this index gives that
-- order without sorting every node of the org. Look-ups by (org, type,
-- value), exact or by prefix, use the unique index of the table.
CREATE INDEX nodes_org_created ON nodes (org_id, created_at DESC, id DESC);
