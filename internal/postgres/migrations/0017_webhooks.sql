-- Webhook subscriptions of each org. The secret is kept as it is: signing
-- a delivery needs it whole. since is the org's event stream position at
-- the creation: a subscription gets the events after it.
CREATE TABLE webhooks (
    id          TEXT COLLATE "C" PRIMARY KEY,
    org_id      TEXT COLLATE "C" NOT NULL,
    url         TEXT COLLATE "C" NOT NULL,
    event_types TEXT[] NOT NULL,
    enabled     BOOLEAN NOT NULL,
    secret      TEXT COLLATE "C" NOT NULL,
    since       BIGINT NOT NULL,
    created_by  TEXT COLLATE "C" NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX webhooks_org_created ON webhooks (org_id, created_at, id);

-- How far the dispatcher went through each org's event stream.
CREATE TABLE webhook_cursors (
    org_id   TEXT COLLATE "C" PRIMARY KEY,
    position BIGINT NOT NULL
);

-- The delivery log of each subscription: one row per event sent to it,
-- rewritten at each attempt.
CREATE TABLE webhook_deliveries (
    id              TEXT COLLATE "C" PRIMARY KEY,
    org_id          TEXT COLLATE "C" NOT NULL,
    webhook_id      TEXT COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        BIGINT NOT NULL,
    event_type      TEXT COLLATE "C" NOT NULL,
    incident_id     TEXT COLLATE "C" NOT NULL,
    state           TEXT COLLATE "C" NOT NULL,
    status_code     INTEGER NOT NULL,
    attempts        INTEGER NOT NULL,
    last_error      TEXT COLLATE "C" NOT NULL,
    next_attempt_at BIGINT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, created_at DESC, event_id DESC);
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (updated_at) WHERE state <> 'pending';
