-- Windowed detection state, shared by every worker (DESIGN §8): the
-- signals seen per (org, detector, key), once per artifact, and the bursts
-- that fired (one observation each, grown while the burst lasts). Detect
-- serializes the work on one (org, detector, key) with an advisory lock.
CREATE TABLE detect_signals (
    org_id      TEXT COLLATE "C" NOT NULL,
    detector    TEXT COLLATE "C" NOT NULL,
    key         TEXT COLLATE "C" NOT NULL,
    artifact_id TEXT COLLATE "C" NOT NULL,
    at          BIGINT NOT NULL,
    member      TEXT COLLATE "C" NOT NULL DEFAULT '',
    nodes       JSON,
    PRIMARY KEY (org_id, detector, key, artifact_id)
);
CREATE INDEX detect_signals_window ON detect_signals (org_id, detector, key, at);
CREATE INDEX detect_signals_at ON detect_signals (at);

CREATE TABLE detect_bursts (
    org_id         TEXT COLLATE "C" NOT NULL,
    detector       TEXT COLLATE "C" NOT NULL,
    key            TEXT COLLATE "C" NOT NULL,
    observation_id TEXT COLLATE "C" NOT NULL,
    first_at       BIGINT NOT NULL,
    last_at        BIGINT NOT NULL,
    PRIMARY KEY (org_id, detector, key, observation_id)
);
CREATE INDEX detect_bursts_last ON detect_bursts (org_id, detector, key, last_at);
