-- The audit log: one row per change made by a write through the API,
-- inserted in the transaction that made the change. Rows are never
-- updated; retention deletes the old ones (by at). AUTOINCREMENT keeps
-- ids from being reused once the newest rows were pruned.
CREATE TABLE audit_log (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id        TEXT NOT NULL,
    actor         TEXT NOT NULL,
    at            INTEGER NOT NULL,
    method        TEXT NOT NULL,
    path          TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id   TEXT NOT NULL,
    before        TEXT,
    after         TEXT
);
CREATE INDEX audit_log_org ON audit_log (org_id, id);
CREATE INDEX audit_log_actor ON audit_log (org_id, actor, id);
CREATE INDEX audit_log_resource ON audit_log (org_id, resource_type, resource_id, id);
CREATE INDEX audit_log_at ON audit_log (at);
