-- Webhook subscriptions of each org. The secret is kept as it is: signing
-- a delivery needs it whole. since is the org's event stream position at
-- the creation: a subscription gets the events after it.
CREATE TABLE webhooks (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    url         TEXT NOT NULL,
    event_types TEXT NOT NULL,
    enabled     INTEGER NOT NULL,
    secret      TEXT NOT NULL,
    since       INTEGER NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX webhooks_org_created ON webhooks (org_id, created_at, id);

-- How far the dispatcher went through each org's event stream.
CREATE TABLE webhook_cursors (
    org_id   TEXT PRIMARY KEY,
    position INTEGER NOT NULL
);

-- The delivery log of each subscription: one row per event sent to it,
-- rewritten at each attempt.
CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL,
    webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        INTEGER NOT NULL,
    event_type      TEXT NOT NULL,
    incident_id     TEXT NOT NULL,
    state           TEXT NOT NULL,
    status_code     INTEGER NOT NULL,
    attempts        INTEGER NOT NULL,
    last_error      TEXT NOT NULL,
    next_attempt_at INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, created_at DESC, event_id DESC);
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (updated_at) WHERE state <> 'pending';
