-- The audit log: one row per change made by a write through the API,
-- inserted in the transaction that made the change. Rows are never
-- updated; retention deletes the old ones (by at).
CREATE TABLE audit_log (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id        TEXT COLLATE "C" NOT NULL,
    actor         TEXT COLLATE "C" NOT NULL,
    at            BIGINT NOT NULL,
    method        TEXT COLLATE "C" NOT NULL,
    path          TEXT COLLATE "C" NOT NULL,
    resource_type TEXT COLLATE "C" NOT NULL,
    resource_id   TEXT COLLATE "C" NOT NULL,
    before        JSONB,
    after         JSONB
);
CREATE INDEX audit_log_org ON audit_log (org_id, id);
CREATE INDEX audit_log_actor ON audit_log (org_id, actor, id);
CREATE INDEX audit_log_resource ON audit_log (org_id, resource_type, resource_id, id);
CREATE INDEX audit_log_at ON audit_log (at);
