-- Windowed detection state, shared by every worker (DESIGN §8): the
-- signals seen per (org, detector, key), once per artifact, and the bursts
-- that fired (one observation each, grown while the burst lasts).
CREATE TABLE detect_signals (
    org_id      TEXT NOT NULL,
    detector    TEXT NOT NULL,
    key         TEXT NOT NULL,
    artifact_id TEXT NOT NULL,
    at          INTEGER NOT NULL,
    member      TEXT NOT NULL DEFAULT '',
    nodes       TEXT,
    PRIMARY KEY (org_id, detector, key, artifact_id)
) WITHOUT ROWID;
CREATE INDEX detect_signals_window ON detect_signals (org_id, detector, key, at);
CREATE INDEX detect_signals_at ON detect_signals (at);

CREATE TABLE detect_bursts (
    org_id         TEXT NOT NULL,
    detector       TEXT NOT NULL,
    key            TEXT NOT NULL,
    observation_id TEXT NOT NULL,
    first_at       INTEGER NOT NULL,
    last_at        INTEGER NOT NULL,
    PRIMARY KEY (org_id, detector, key, observation_id)
) WITHOUT ROWID;
CREATE INDEX detect_bursts_last ON detect_bursts (org_id, detector, key, last_at);
